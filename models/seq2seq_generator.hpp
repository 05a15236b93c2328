// Generation from an encoder-decoder Transformer with caches: each batch of sources runs
// through the encode graph once (models/seq2seq_generate.hpp), each decoder layer's
// cross-attention keys and values are kept, and every new target token costs one decode step
// over one position per row (self-attention reads its cache). The search is greedy or beam
// search (models/beam_search.hpp), with n-best output; a beam's rows continue other rows'
// caches, reordered after each step.
//
//   Seq2SeqGenerator gen(seq2seq_graphs<kConfig>(), trainer.params());
//   auto best = gen.generate(sources, rows, {.search = {.beam_size = 4}});  // best[i][0].ids
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <stag/models/beam_search.hpp>
#include <stag/models/seq2seq_generate.hpp>
#include <stag/runtime/session.hpp>

namespace stag {

// The inference graphs and sizes of one TransformerConfig.
struct Seq2SeqGraphs {
  GraphView encode, decode;
  int dec_layers = 0;
  int src_vocab = 0, tgt_vocab = 0;
};
template <const TransformerConfig& C>
Seq2SeqGraphs seq2seq_graphs() {
  return {transformer_encode_graph<C>, transformer_decode_graph<C>, C.dec_layers, C.src_vocab,
          C.tgt_vocab};
}

// The nodes of the encode graph that the decode graph reads as state: each decoder layer's
// cross-attention keys and values, "decoder.<l>.cross_attn.k_memory" and ".v_memory".
std::vector<std::string> seq2seq_memory_names(const Seq2SeqGraphs& graphs);

// The parameters of both graphs (no state), initialised from `seed`: the store a checkpoint is
// loaded into, or random weights for tests and benchmarks.
NamedArrays seq2seq_weights(const Seq2SeqGraphs& graphs, std::uint64_t seed = 0);

struct Seq2SeqGeneratorOptions {
  int threads = 0;  // 0: every core
  Schedule schedule = Schedule::sequential;
  std::size_t batch_rows = 64;  // sources searched together (times beam_size decoder rows)
  bool profile = false;         // time every node of the decode steps (profile_report)
  Device device = Device::cpu;  // where the encoder and decode steps run (runtime/device.hpp)
};

struct Seq2SeqGenerateOptions {
  // beam_size 1: greedy decoding. search.max_new is replaced by max_new below.
  BeamSearchOptions search = {.beam_size = 1};
  std::int64_t max_src_len = 0;  // sources are cut to this many ids (0: no limit)
  std::int64_t max_new = 0;      // output ids per row at most, <eos> included (0: source + 6)
  // Greedy decoding (beam_size 1) only: called for every new id of a row (not <eos>), in order,
  // before the next step runs; TokenEvent::row is the index into `rows`. Returning false ends
  // that row's output there.
  std::function<bool(const TokenEvent&)> on_token = nullptr;
  // Called with each source's n-best (index into `rows`) as soon as its search ends, so a
  // caller can print results while longer rows still decode.
  std::function<void(std::size_t row, const std::vector<Hypothesis>&)> on_result = nullptr;
  // Rows whose search has ended cost no attention and no cache writes at once; when half of a
  // batch's sources or more are done, the others move to a smaller batch (a decode session of
  // that many rows, kept for later batches), so their matmuls stop paying for them too.
  bool shrink = true;
};

class Seq2SeqGenerator {
 public:
  // `weights` holds every parameter of transformer<C> (more is ignored: optimizer state); the
  // arrays are shared, not copied, so a trainer's parameters can be passed while it trains.
  // A missing parameter or a wrong shape is a stag::Error naming the tensor.
  Seq2SeqGenerator(const Seq2SeqGraphs& graphs, NamedArrays weights,
                   Seq2SeqGeneratorOptions options = {});
  ~Seq2SeqGenerator();

  // The search's n_best hypotheses for `sources[rows[i]]`, best first. stag::Error on an empty
  // `rows`, an index out of range, an empty source, an id outside the source vocabulary, or
  // on_token with beam search. A batch someone padded already (left or right) is
  // data::unpad_batch(ids, keep) with rows 0 .. B-1.
  std::vector<std::vector<Hypothesis>> generate(
      const std::vector<std::vector<std::int32_t>>& sources, std::span<const std::size_t> rows,
      const Seq2SeqGenerateOptions& options = {});
  // The best hypothesis' ids per row.
  std::vector<std::vector<std::int32_t>> generate_ids(
      const std::vector<std::vector<std::int32_t>>& sources, std::span<const std::size_t> rows,
      const Seq2SeqGenerateOptions& options = {});

  // The steps generate() is made of, for tests and custom searches. encode: src [B, S] i32 and
  // src_keep [B, S] bool through the encoder; the decoder then has B * copies rows (row r reads
  // source r / copies) and a cache of max_len target positions.
  void encode(const Array& src, const Array& src_keep, std::int64_t copies, std::int64_t max_len);
  // ids [rows, chunk] at positions pos[r] .. pos[r]+chunk-1 (-1: row r is inactive): the
  // logits [rows, chunk, tgt_vocab].
  Array step(const Array& ids, std::span<const std::int32_t> pos);
  // Row r's self-attention caches become those of row parents[r], over the first `positions`.
  void reorder(std::span<const std::int32_t> parents, std::int64_t positions);
  // The decoder keeps only rows from[0], from[1], ...: a smaller batch, each new row r with
  // the caches, memory and source mask of old row from[r].
  void keep_rows(std::span<const std::int32_t> from);

  std::int64_t rows() const { return rows_; }
  std::size_t decode_sessions() const { return sessions_.size(); }  // planned so far, kept
  // With Seq2SeqGeneratorOptions::profile: the slowest nodes of the decode session in use.
  std::string profile_report(int top = 20) const;

 private:
  Seq2SeqGraphs graphs_;
  NamedArrays weights_;
  Seq2SeqGeneratorOptions opts_;
  std::unique_ptr<Session> encode_;
  // Decode sessions by (rows, max_len, source length); decode_ is the one in use.
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::unique_ptr<Session>>
      sessions_;
  Session* decode_ = nullptr;
  Session& decode_session(std::int64_t rows, std::int64_t max_len, std::int64_t src_len);
  std::int64_t rows_ = 0, max_len_ = 0, src_len_ = 0;
  Array src_keep_;  // [rows, S]: each decoder row's source mask
  std::vector<std::string> memory_names_, cache_names_;
};

}  // namespace stag

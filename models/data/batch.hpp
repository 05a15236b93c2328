// Batches that feed a graph directly: i32 ids [B, S] padded with kPadId, a bool keep mask
// [B, S] (true on real tokens), and i32 labels [B] / target ids [B, T] / next tokens [B, S].
// Batch plans (which rows go together) are seeded and may bucket rows of similar length.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/bind.hpp>

namespace stag::data {

// How a batch's sequences are laid out along S.
struct PadOptions {
  std::int64_t max_len = 0;  // 0: no limit; otherwise longer sequences are cut to max_len
  bool pad_to_max = false;   // S = max_len always (a fixed shape); else S = longest row (capped)
  // S is rounded up to a multiple of this (then capped at max_len), so that batches of varying
  // length take a few shapes, and so a few plans (a Session plans once per shape).
  std::int64_t multiple_of = 1;
  // Padding before each row's tokens instead of after (the layout of tokenisers that pad for
  // a generate call that has one position for the whole batch). stag's graphs and generators
  // take right padding or, better, ragged rows: data::unpad_batch turns either back.
  bool left = false;
};

struct PaddedIds {
  Array ids;                  // i32 [B, S], kPadId after each row's end
  Array keep;                 // bool [B, S], true where ids holds a real token
  std::size_t truncated = 0;  // rows cut to max_len
};
// Pads (and truncates) `seqs[rows[b]]` into row b. Throws stag::Error on an empty `rows`, on
// pad_to_max without max_len, on multiple_of < 1, or on a row index out of range.
PaddedIds pad_batch(const std::vector<std::vector<std::int32_t>>& seqs,
                    std::span<const std::size_t> rows, const PadOptions& pad = {});

// The rows of a padded batch again: row b of ids [B, S] i32 where keep [B, S] bool is true.
// Padding may be at either end (left or right) but not inside a row; a row with a gap, an
// empty row, or mismatched shapes or dtypes is a stag::Error naming the row.
std::vector<std::vector<std::int32_t>> unpad_batch(const Array& ids, const Array& keep);

struct BatchingOptions {
  std::size_t batch_size = 32;
  bool shuffle = true;           // a new order each epoch, from (seed, epoch)
  bool bucket = false;           // group rows of similar length (less padding)
  std::size_t bucket_pool = 50;  // bucketing sorts pools of bucket_pool * batch_size rows
  bool drop_last = false;        // drop a final batch smaller than batch_size
  std::uint64_t seed = 0;
};
// Rows 0..lengths.size()-1 grouped into batches. Every row appears exactly once (except those
// in a dropped last batch). With bucketing, rows are shuffled, each pool is sorted by length
// and cut into batches, and the batches are shuffled again, so batches vary across epochs but
// hold rows of similar length.
std::vector<std::vector<std::size_t>> make_batches(std::span<const std::size_t> lengths,
                                                   const BatchingOptions& options,
                                                   std::uint64_t epoch = 0);

// --- Classification -------------------------------------------------------------------------
struct EncodedTexts {
  std::vector<std::vector<std::int32_t>> ids;
  std::vector<std::int32_t> labels;
  std::vector<std::size_t> lengths() const;
};
template <class Tokenizer>
EncodedTexts encode_texts(const Tokenizer& tok, const TextDataset& ds, EncodeOptions options = {}) {
  EncodedTexts out;
  out.ids.reserve(ds.examples.size());
  for (const TextExample& e : ds.examples) {
    out.ids.push_back(tok.encode(e.text, options));
    out.labels.push_back(e.label);
  }
  return out;
}

struct ClassBatch {
  Array ids;    // i32 [B, S]
  Array keep;   // bool [B, S]
  Array label;  // i32 [B]
  std::vector<std::size_t> rows;
  // {"ids", "keep", "label"}: the input names of stag's classifier graphs.
  NamedArrays inputs() const { return {{"ids", ids}, {"keep", keep}, {"label", label}}; }
};
ClassBatch make_class_batch(const EncodedTexts& data, std::span<const std::size_t> rows,
                            const PadOptions& pad = {});

// --- Sequence to sequence (G2P) --------------------------------------------------------------
// A vocabulary of whole symbols (phonemes), after the four shared special ids.
class SymbolVocab {
 public:
  SymbolVocab() = default;
  explicit SymbolVocab(std::vector<std::string> symbols);  // throws on a repeated symbol
  std::size_t size() const { return kNumSpecial + symbols_.size(); }
  std::int32_t id_of(const std::string& s) const;  // kUnkId when absent
  const std::string& symbol(std::int32_t id) const;
  std::vector<std::int32_t> encode(const std::vector<std::string>& symbols) const;
  std::vector<std::string> decode(std::span<const std::int32_t> ids) const;  // specials skipped
  const std::vector<std::string>& symbols() const { return symbols_; }

 private:
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, std::int32_t> ids_;
};

struct EncodedPairs {
  std::vector<std::vector<std::int32_t>> src, tgt;  // tgt without <bos>/<eos>
  std::vector<std::size_t> lengths() const;         // max(src, tgt + 1), for bucketing
};
EncodedPairs encode_g2p(const CharTokenizer& letters, const SymbolVocab& phonemes,
                        const G2pDataset& ds);

// The label that cross_entropy ignores (its default ignore_index): padded target positions.
inline constexpr std::int32_t kIgnoreLabel = -100;

struct Seq2SeqBatch {
  Array src, src_keep;  // i32 / bool [B, S]
  Array tgt_in;         // i32 [B, T]: <bos> y1 .. yn, padded
  Array tgt_out;        // i32 [B, T]: y1 .. yn <eos>, kIgnoreLabel at padding (the labels)
  Array tgt_keep;       // bool [B, T]: positions that count in the loss
  std::vector<std::size_t> rows;
  NamedArrays inputs() const {
    return {{"src", src},
            {"src_keep", src_keep},
            {"tgt_in", tgt_in},
            {"tgt_out", tgt_out},
            {"tgt_keep", tgt_keep}};
  }
};
Seq2SeqBatch make_seq2seq_batch(const EncodedPairs& data, std::span<const std::size_t> rows,
                                const PadOptions& src_pad = {}, const PadOptions& tgt_pad = {});

// --- Language modelling ------------------------------------------------------------------------
// Each document's tokens followed by kEosId, concatenated.
template <class Tokenizer>
std::vector<std::int32_t> encode_corpus(const Tokenizer& tok, const Corpus& corpus) {
  std::vector<std::int32_t> stream;
  for (const std::string& d : corpus.documents) {
    const std::vector<std::int32_t> ids = tok.encode(d);
    stream.insert(stream.end(), ids.begin(), ids.end());
    stream.push_back(kEosId);
  }
  return stream;
}

struct LmBatch {
  Array ids;      // i32 [B, S]: stream[o .. o+S)
  Array targets;  // i32 [B, S]: stream[o+1 .. o+S+1), the next tokens
  Array keep;     // bool [B, S]: all true (windows are full); kept for a uniform interface
  NamedArrays inputs() const { return {{"ids", ids}, {"targets", targets}, {"keep", keep}}; }
};
// Window starts 0, S, 2S, ... (each window reads S + 1 tokens), in a seeded order per epoch,
// grouped into batches of `batch_size` (the last partial batch is dropped: LM shapes stay fixed).
std::vector<std::vector<std::size_t>> lm_window_batches(std::size_t stream_size,
                                                        std::size_t seq_len, std::size_t batch_size,
                                                        std::uint64_t seed,
                                                        std::uint64_t epoch = 0);
LmBatch make_lm_batch(const std::vector<std::int32_t>& stream, std::span<const std::size_t> starts,
                      std::size_t seq_len);

}  // namespace stag::data

// Decoding an encoder-decoder model (transformer<C>, or any graph with its inputs: src, src_keep,
// tgt_in, tgt_keep, tgt_out and a "logits" output [B, T, V]) with a Session: greedy search over a
// batch of source sequences. The generation issue's encode/decode-step graphs with caches and beam
// search build on this interface; to add a strategy, add a function beside greedy_decode_seq2seq.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <stag/models/data/char_tokenizer.hpp>
#include <stag/runtime/session.hpp>

namespace stag {

struct Seq2SeqDecodeOptions {
  std::int64_t max_src_len = 0;  // sources are cut to this many ids (0: no limit)
  std::int64_t max_new = 0;      // at most this many output ids per row (0: source length + 6)
  // Ids from here up are never produced (a vocabulary larger than the ids in use); 0: all.
  std::int32_t vocab_limit = 0;
  std::int32_t bos_id = data::kBosId, eos_id = data::kEosId;
  std::size_t batch_rows = 256;  // rows decoded together
};

// Greedy decoding: at step t the decoder reads <bos> y1 .. y(t-1) and y(t) is the argmax of the
// last position's logits over eos_id and the ids above it (below vocab_limit), until every row
// has produced <eos> or max_new ids. Returns each row's ids without <bos> and <eos>. The decoder
// reruns on the whole prefix each step (no cache): fine for short outputs such as words.
// `sources[rows[i]]` is row i; stag::Error on an empty `rows` or an index out of range.
std::vector<std::vector<std::int32_t>> greedy_decode_seq2seq(
    Session& s, const std::vector<std::vector<std::int32_t>>& sources,
    std::span<const std::size_t> rows, const Seq2SeqDecodeOptions& options = {});

}  // namespace stag

// Greedy decoding of an encoder-decoder graph (see seq2seq_decode.hpp): one run of the whole
// graph per output position, labels fed as ignored (-100) so that the loss does not matter.
#include <algorithm>
#include <string>

#include <stag/models/data/batch.hpp>
#include <stag/models/seq2seq_decode.hpp>

namespace stag {

std::vector<std::vector<std::int32_t>> greedy_decode_seq2seq(
    Session& s, const std::vector<std::vector<std::int32_t>>& sources,
    std::span<const std::size_t> rows, const Seq2SeqDecodeOptions& o) {
  if (o.batch_rows == 0) throw Error("stag: greedy_decode_seq2seq: batch_rows must be positive");
  if (o.max_new < 0 || o.max_src_len < 0 || o.vocab_limit < 0)
    throw Error(
        "stag: greedy_decode_seq2seq: max_new, max_src_len and vocab_limit must not be "
        "negative");
  if (rows.empty()) throw Error("stag: greedy_decode_seq2seq: no rows to decode");
  std::vector<std::vector<std::int32_t>> out;
  for (std::size_t k = 0; k < rows.size(); k += o.batch_rows) {
    const std::span<const std::size_t> chunk =
        rows.subspan(k, std::min(o.batch_rows, rows.size() - k));
    // pad_batch refuses rows out of range, naming the index.
    const data::PaddedIds src = data::pad_batch(sources, chunk, {.max_len = o.max_src_len});
    const auto b = static_cast<std::int64_t>(chunk.size());
    std::vector<std::vector<std::int32_t>> prefix(chunk.size(), {o.bos_id}), result(chunk.size());
    std::vector<char> done(chunk.size(), 0);
    const std::int64_t max_out = o.max_new > 0 ? o.max_new : src.ids.dim(1) + 6;
    for (std::int64_t t = 1; t <= max_out; ++t) {
      Array tin(DType::i32, {b, t}), keep(DType::boolean, {b, t}), tout(DType::i32, {b, t});
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t j = 0; j < t; ++j) {
          tin.data<std::int32_t>()[i * t + j] =
              prefix[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
          keep.data<bool>()[i * t + j] = true;
          tout.data<std::int32_t>()[i * t + j] = data::kIgnoreLabel;  // no labels
        }
      s.set_inputs({{"src", src.ids},
                    {"src_keep", src.keep},
                    {"tgt_in", tin},
                    {"tgt_keep", keep},
                    {"tgt_out", tout}});
      s.run();
      const Array logits = s.get("logits");  // [B, t, V]
      const std::int64_t v = logits.dim(2);
      const std::int64_t limit = o.vocab_limit > 0 ? std::min<std::int64_t>(v, o.vocab_limit) : v;
      if (o.eos_id >= limit)
        throw Error("stag: greedy_decode_seq2seq: eos id " + std::to_string(o.eos_id) +
                    " is outside the " + std::to_string(limit) + " ids decoded");
      bool all_done = true;
      for (std::int64_t i = 0; i < b; ++i) {
        const float* row = logits.data<float>() + (i * t + t - 1) * v;
        std::int32_t next = o.eos_id;
        for (auto c = static_cast<std::int32_t>(o.eos_id + 1); c < limit; ++c)
          if (row[c] > row[next]) next = c;
        auto& r = result[static_cast<std::size_t>(i)];
        char& finished = done[static_cast<std::size_t>(i)];
        if (!finished) {
          if (next == o.eos_id)
            finished = 1;
          else
            r.push_back(next);
        }
        prefix[static_cast<std::size_t>(i)].push_back(next);
        all_done = all_done && finished;
      }
      if (all_done) break;
    }
    out.insert(out.end(), result.begin(), result.end());
  }
  return out;
}

}  // namespace stag

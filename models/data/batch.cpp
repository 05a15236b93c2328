// Implementation of padding, batch plans and the three batch kinds (see batch.hpp).
#include <stag/models/data/batch.hpp>

#include <algorithm>

#include <stag/models/data/split.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

std::vector<std::size_t> sizes_of(const std::vector<std::vector<std::int32_t>>& seqs) {
  std::vector<std::size_t> n;
  n.reserve(seqs.size());
  for (const auto& s : seqs) n.push_back(s.size());
  return n;
}

void check_rows(std::span<const std::size_t> rows, std::size_t n, const char* what) {
  if (rows.empty())
    throw Error(std::string("stag::data: ") + what + ": a batch needs at least one row");
  for (std::size_t r : rows)
    if (r >= n)
      throw Error(std::string("stag::data: ") + what + ": row " + std::to_string(r) +
                  " is out of range (the data has " + std::to_string(n) + " rows)");
}

}  // namespace

PaddedIds pad_batch(const std::vector<std::vector<std::int32_t>>& seqs,
                    std::span<const std::size_t> rows, const PadOptions& pad) {
  check_rows(rows, seqs.size(), "pad_batch");
  if (pad.max_len < 0)
    throw Error("stag::data: pad_batch: max_len " + std::to_string(pad.max_len) + " is negative");
  if (pad.pad_to_max && pad.max_len == 0)
    throw Error("stag::data: pad_batch: pad_to_max needs max_len > 0");
  if (pad.multiple_of < 1)
    throw Error("stag::data: pad_batch: multiple_of " + std::to_string(pad.multiple_of) +
                " must be at least 1");
  std::size_t longest = 0;
  for (std::size_t r : rows) longest = std::max(longest, seqs[r].size());
  const auto m = static_cast<std::size_t>(pad.multiple_of);
  std::size_t s = (longest + m - 1) / m * m;
  if (pad.max_len > 0)
    s = pad.pad_to_max ? static_cast<std::size_t>(pad.max_len)
                       : std::min(s, static_cast<std::size_t>(pad.max_len));
  // NOTE: a batch of empty sequences still gets one (masked) position: zero-size dims break
  // kernels.
  s = std::max<std::size_t>(s, 1);
  const auto b = static_cast<std::int64_t>(rows.size());
  PaddedIds out{Array(DType::i32, {b, static_cast<std::int64_t>(s)}),
                Array(DType::boolean, {b, static_cast<std::int64_t>(s)}), 0};
  std::int32_t* ids = out.ids.data<std::int32_t>();
  out.keep.set_mask_role(MaskRole::keep);  // a session refuses it for a padding_input
  bool* keep = out.keep.data<bool>();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::vector<std::int32_t>& seq = seqs[rows[i]];
    const std::size_t n = std::min(seq.size(), s);
    if (seq.size() > s) ++out.truncated;
    const std::size_t first = pad.left ? s - n : 0;  // where the row's tokens start
    for (std::size_t k = 0; k < s; ++k) {
      const bool real = k >= first && k < first + n;
      ids[i * s + k] = real ? seq[k - first] : kPadId;
      keep[i * s + k] = real;
    }
  }
  return out;
}

std::vector<std::vector<std::int32_t>> unpad_batch(const Array& ids, const Array& keep) {
  if (ids.rank() != 2 || ids.dtype() != DType::i32 || keep.dims() != ids.dims() ||
      keep.dtype() != DType::boolean)
    throw Error("stag::data: unpad_batch: expected ids [B, S] i32 and keep [B, S] bool, got " +
                ids.describe() + " and " + keep.describe());
  const std::int64_t b = ids.dim(0), s = ids.dim(1);
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(b));
  for (std::int64_t r = 0; r < b; ++r) {
    const bool* k = keep.data<bool>() + r * s;
    std::int64_t first = 0, last = s;
    while (first < s && !k[first]) ++first;
    while (last > first && !k[last - 1]) --last;
    if (first == last)
      throw Error("stag::data: unpad_batch: row " + std::to_string(r) + " has no token");
    for (std::int64_t j = first; j < last; ++j)
      if (!k[j])
        throw Error("stag::data: unpad_batch: row " + std::to_string(r) +
                    " has padding inside it, at position " + std::to_string(j) +
                    " (padding goes before or after a row's tokens)");
    const std::int32_t* x = ids.data<std::int32_t>() + r * s;
    out[static_cast<std::size_t>(r)].assign(x + first, x + last);
  }
  return out;
}

std::vector<std::vector<std::size_t>> make_batches(std::span<const std::size_t> lengths,
                                                   const BatchingOptions& o, std::uint64_t epoch) {
  if (o.batch_size == 0) throw Error("stag::data: make_batches: batch_size must be positive");
  std::vector<std::size_t> order(lengths.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (o.shuffle) shuffle_in_place(order, o.seed, epoch);
  if (o.bucket) {
    // Pools are a whole number of batches, so only the very last batch can be short.
    const std::size_t pool = std::max<std::size_t>(o.bucket_pool, 1) * o.batch_size;
    for (std::size_t p = 0; p < order.size(); p += pool) {
      const auto first = order.begin() + static_cast<std::ptrdiff_t>(p);
      const auto last =
          order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), p + pool));
      std::stable_sort(first, last,
                       [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
    }
  }
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t k = 0; k < order.size(); k += o.batch_size) {
    const std::size_t end = std::min(order.size(), k + o.batch_size);
    if (end - k < o.batch_size && o.drop_last) break;
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(k),
                         order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  if (o.bucket && o.shuffle) {
    // Shuffle whole batches so that lengths do not rise steadily through each pool; a short
    // last batch stays last.
    const std::size_t n_full = order.size() / o.batch_size;
    const std::vector<std::size_t> perm = shuffled_indices(n_full, o.seed ^ 0xb0c4e7ull, epoch);
    std::vector<std::vector<std::size_t>> shuffled;
    shuffled.reserve(batches.size());
    for (std::size_t k : perm) shuffled.push_back(std::move(batches[k]));
    for (std::size_t k = n_full; k < batches.size(); ++k) shuffled.push_back(std::move(batches[k]));
    batches = std::move(shuffled);
  }
  return batches;
}

std::vector<std::size_t> EncodedTexts::lengths() const {
  return sizes_of(ids);
}

ClassBatch make_class_batch(const EncodedTexts& data, std::span<const std::size_t> rows,
                            const PadOptions& pad) {
  if (data.labels.size() != data.ids.size())
    throw Error("stag::data: make_class_batch: " + std::to_string(data.ids.size()) + " texts but " +
                std::to_string(data.labels.size()) + " labels");
  PaddedIds p = pad_batch(data.ids, rows, pad);
  ClassBatch b{std::move(p.ids), std::move(p.keep),
               Array(DType::i32, {static_cast<std::int64_t>(rows.size())}),
               std::vector<std::size_t>(rows.begin(), rows.end())};
  for (std::size_t i = 0; i < rows.size(); ++i)
    b.label.data<std::int32_t>()[i] = data.labels[rows[i]];
  return b;
}

SymbolVocab::SymbolVocab(std::vector<std::string> symbols) : symbols_(std::move(symbols)) {
  for (std::size_t i = 0; i < symbols_.size(); ++i)
    if (!ids_.emplace(symbols_[i], static_cast<std::int32_t>(kNumSpecial + i)).second)
      throw Error("stag::data: SymbolVocab: symbol \"" + symbols_[i] + "\" appears twice");
}

std::int32_t SymbolVocab::id_of(const std::string& s) const {
  const auto it = ids_.find(s);
  return it == ids_.end() ? kUnkId : it->second;
}

const std::string& SymbolVocab::symbol(std::int32_t id) const {
  if (id < kNumSpecial || static_cast<std::size_t>(id) >= size())
    throw Error("stag::data: SymbolVocab: id " + std::to_string(id) +
                " is not a symbol id (symbols are " + std::to_string(kNumSpecial) + ".." +
                std::to_string(size() - 1) + ")");
  return symbols_[static_cast<std::size_t>(id - kNumSpecial)];
}

std::vector<std::int32_t> SymbolVocab::encode(const std::vector<std::string>& symbols) const {
  std::vector<std::int32_t> ids;
  ids.reserve(symbols.size());
  for (const std::string& s : symbols) ids.push_back(id_of(s));
  return ids;
}

std::vector<std::string> SymbolVocab::decode(std::span<const std::int32_t> ids) const {
  std::vector<std::string> out;
  for (std::int32_t id : ids)
    if (id >= kNumSpecial || id < 0) out.push_back(symbol(id));
  return out;
}

std::vector<std::size_t> EncodedPairs::lengths() const {
  std::vector<std::size_t> n(src.size());
  for (std::size_t i = 0; i < src.size(); ++i) n[i] = std::max(src[i].size(), tgt[i].size() + 1);
  return n;
}

EncodedPairs encode_g2p(const CharTokenizer& letters, const SymbolVocab& phonemes,
                        const G2pDataset& ds) {
  EncodedPairs out;
  for (const G2pExample& e : ds.examples) {
    out.src.push_back(letters.encode(e.word));
    out.tgt.push_back(phonemes.encode(e.phonemes));
  }
  return out;
}

Seq2SeqBatch make_seq2seq_batch(const EncodedPairs& data, std::span<const std::size_t> rows,
                                const PadOptions& src_pad, const PadOptions& tgt_pad) {
  if (data.src.size() != data.tgt.size())
    throw Error("stag::data: make_seq2seq_batch: " + std::to_string(data.src.size()) +
                " sources but " + std::to_string(data.tgt.size()) + " targets");
  check_rows(rows, data.tgt.size(), "make_seq2seq_batch");
  PaddedIds src = pad_batch(data.src, rows, src_pad);
  // Decoder input <bos> y and labels y <eos>: both have length n + 1 and share one mask.
  std::vector<std::vector<std::int32_t>> tin, tout;
  for (std::size_t r : rows) {
    tin.emplace_back(1, kBosId);
    tin.back().insert(tin.back().end(), data.tgt[r].begin(), data.tgt[r].end());
    tout.emplace_back(data.tgt[r]);
    tout.back().push_back(kEosId);
  }
  std::vector<std::size_t> local(rows.size());
  for (std::size_t i = 0; i < local.size(); ++i) local[i] = i;
  PaddedIds in = pad_batch(tin, local, tgt_pad);
  PaddedIds out = pad_batch(tout, local, tgt_pad);
  // The labels are ignored at padding (cross_entropy's ignore index), not "predict <pad>".
  for (std::int64_t i = 0; i < out.ids.numel(); ++i)
    if (!out.keep.data<bool>()[i]) out.ids.data<std::int32_t>()[i] = kIgnoreLabel;
  return {std::move(src.ids),  std::move(src.keep),
          std::move(in.ids),   std::move(out.ids),
          std::move(out.keep), std::vector<std::size_t>(rows.begin(), rows.end())};
}

std::vector<std::vector<std::size_t>> lm_window_batches(std::size_t stream_size,
                                                        std::size_t seq_len, std::size_t batch_size,
                                                        std::uint64_t seed, std::uint64_t epoch) {
  if (seq_len == 0 || batch_size == 0)
    throw Error("stag::data: lm_window_batches: seq_len and batch_size must be positive");
  const std::size_t windows = stream_size > seq_len ? (stream_size - 1) / seq_len : 0;
  std::vector<std::size_t> order = shuffled_indices(windows, seed, epoch);
  std::vector<std::vector<std::size_t>> batches;
  for (std::size_t k = 0; k + batch_size <= order.size(); k += batch_size) {
    batches.emplace_back();
    for (std::size_t j = k; j < k + batch_size; ++j) batches.back().push_back(order[j] * seq_len);
  }
  return batches;
}

LmBatch make_lm_batch(const std::vector<std::int32_t>& stream, std::span<const std::size_t> starts,
                      std::size_t seq_len) {
  if (starts.empty() || seq_len == 0)
    throw Error("stag::data: make_lm_batch: needs at least one window of positive length");
  const auto b = static_cast<std::int64_t>(starts.size());
  const auto s = static_cast<std::int64_t>(seq_len);
  LmBatch out{Array(DType::i32, {b, s}), Array(DType::i32, {b, s}), Array(DType::boolean, {b, s})};
  out.keep.set_mask_role(MaskRole::keep);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (starts[i] + seq_len + 1 > stream.size())
      throw Error("stag::data: make_lm_batch: window at " + std::to_string(starts[i]) + " needs " +
                  std::to_string(seq_len + 1) + " tokens but the stream has " +
                  std::to_string(stream.size()));
    for (std::size_t k = 0; k < seq_len; ++k) {
      out.ids.data<std::int32_t>()[i * seq_len + k] = stream[starts[i] + k];
      out.targets.data<std::int32_t>()[i * seq_len + k] = stream[starts[i] + k + 1];
      out.keep.data<bool>()[i * seq_len + k] = true;
    }
  }
  return out;
}

}  // namespace stag::data

// Seq2SeqGenerator (see seq2seq_generator.hpp): an encode session reused across batches, a
// decode session per (rows, cache length, source length), the memory copied in once per batch.
#include <algorithm>
#include <cstring>

#include <stag/models/data/batch.hpp>
#include <stag/models/seq2seq_generator.hpp>
#include <stag/runtime/params.hpp>

namespace stag {
namespace {

// Every parameter (not state) of the session's graph must come from `weights`.
void check_weights(const Session& s, const NamedArrays& weights, const char* which) {
  std::vector<std::string> missing;
  for (const auto& [name, a] : s.params()) {
    const int n = s.graph().find(name);
    if (n >= 0 && (s.graph().node(n).flags & kFlagParam) && !weights.count(name))
      missing.push_back(name);
  }
  if (!missing.empty())
    throw Error("stag::Seq2SeqGenerator: no weights for " + std::to_string(missing.size()) +
                " parameter(s) of the " + which + " graph, e.g. '" + missing.front() +
                "' (is this a checkpoint of this encoder-decoder model?)");
}

}  // namespace

NamedArrays seq2seq_weights(const Seq2SeqGraphs& graphs, std::uint64_t seed) {
  NamedArrays w;
  for (const GraphView* g : {&graphs.encode, &graphs.decode})
    for (auto& [name, a] :
         make_params(*g, {{"batch", 1}, {"max_len", 1}, {"src_seq", 1}, {"chunk", 1}}, seed)) {
      const int n = g->find(name);
      if (n >= 0 && (g->node(n).flags & kFlagParam)) w.emplace(name, a);
    }
  return w;
}

std::vector<std::string> seq2seq_memory_names(const Seq2SeqGraphs& graphs) {
  std::vector<std::string> names;
  for (int l = 0; l < graphs.dec_layers; ++l)
    for (const char* kv : {".cross_attn.k_memory", ".cross_attn.v_memory"})
      names.push_back("decoder." + std::to_string(l) + kv);
  return names;
}

Seq2SeqGenerator::Seq2SeqGenerator(const Seq2SeqGraphs& graphs, NamedArrays weights,
                                   Seq2SeqGeneratorOptions options)
    : graphs_(graphs), weights_(std::move(weights)), opts_(options) {
  if (opts_.batch_rows == 0) throw Error("stag::Seq2SeqGenerator: batch_rows must be positive");
  memory_names_ = seq2seq_memory_names(graphs_);
  for (int l = 0; l < graphs_.dec_layers; ++l) {
    const std::string layer = "decoder." + std::to_string(l);
    cache_names_.push_back(layer + ".self_attn.k_cache");
    cache_names_.push_back(layer + ".self_attn.v_cache");
  }
  SessionOptions so;
  so.device = opts_.device;
  so.threads = opts_.threads;
  so.schedule = opts_.schedule;
  so.keep = memory_names_;
  so.shared_params = weights_;
  encode_ = std::make_unique<Session>(graphs_.encode, so);
  check_weights(*encode_, weights_, "encode");
}

Seq2SeqGenerator::~Seq2SeqGenerator() = default;

void Seq2SeqGenerator::encode(const Array& src, const Array& src_keep, std::int64_t copies,
                              std::int64_t max_len) {
  if (src.rank() != 2 || src_keep.dims() != src.dims() || src.dtype() != DType::i32 ||
      src_keep.dtype() != DType::boolean)
    throw Error(
        "stag::Seq2SeqGenerator::encode: expected src [B, S] i32 and src_keep [B, S] "
        "bool, got " +
        src.describe() + " and " + src_keep.describe());
  if (copies < 1 || max_len < 1)
    throw Error("stag::Seq2SeqGenerator::encode: copies and max_len must be at least 1");
  const std::int64_t b = src.dim(0), s = src.dim(1);
  for (std::int64_t i = 0; i < src.numel(); ++i) {
    const std::int32_t id = src.data<std::int32_t>()[i];
    if (src_keep.data<bool>()[i] && (id < 0 || id >= graphs_.src_vocab))
      throw Error("stag::Seq2SeqGenerator: source row " + std::to_string(i / s) + " has id " +
                  std::to_string(id) + ", outside the source vocabulary of " +
                  std::to_string(graphs_.src_vocab));
  }
  encode_->set_inputs({{"src", src}, {"src_keep", src_keep}});
  encode_->run();

  const std::int64_t rows = b * copies;
  decode_ = &decode_session(rows, max_len, s);
  // Decoder row r reads source r / copies: its memory and its padding mask.
  for (const std::string& name : memory_names_) {
    const Array m = encode_->get(name);      // [B, H, S, Dh]
    Array dst = decode_->params().at(name);  // [rows, H, S, Dh], shares the session's storage
    const std::size_t row_bytes = m.bytes() / static_cast<std::size_t>(b);
    for (std::int64_t r = 0; r < rows; ++r)
      std::memcpy(
          static_cast<std::byte*>(dst.raw()) + static_cast<std::size_t>(r) * row_bytes,
          static_cast<const std::byte*>(m.raw()) + static_cast<std::size_t>(r / copies) * row_bytes,
          row_bytes);
  }
  src_keep_ = Array(DType::boolean, {rows, s});
  src_keep_.set_mask_role(MaskRole::keep);
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(src_keep_.data<bool>() + r * s, src_keep.data<bool>() + (r / copies) * s,
                static_cast<std::size_t>(s) * sizeof(bool));
}

Session& Seq2SeqGenerator::decode_session(std::int64_t rows, std::int64_t max_len,
                                          std::int64_t src_len) {
  auto key = std::make_tuple(rows, max_len, src_len);
  auto it = sessions_.find(key);
  if (it == sessions_.end()) {
    // At most 16 kept (their caches are rows x max_len each): drop one other than the current.
    if (sessions_.size() >= 16)
      for (auto e = sessions_.begin(); e != sessions_.end(); ++e)
        if (e->second.get() != decode_) {
          sessions_.erase(e);
          break;
        }
    SessionOptions so;
    so.device = opts_.device;
    so.threads = opts_.threads;
    so.schedule = opts_.schedule;
    so.dims = {{"batch", rows}, {"max_len", max_len}, {"src_seq", src_len}};
    so.shared_params = weights_;
    so.profile = opts_.profile;
    auto session = std::make_unique<Session>(graphs_.decode, so);
    check_weights(*session, weights_, "decode-step");
    it = sessions_.emplace(key, std::move(session)).first;
  }
  rows_ = rows;
  max_len_ = max_len;
  src_len_ = src_len;
  return *it->second;
}

void Seq2SeqGenerator::keep_rows(std::span<const std::int32_t> from) {
  if (!decode_ || from.empty())
    throw Error("stag::Seq2SeqGenerator::keep_rows: encode first, and keep at least one row");
  for (std::int32_t r : from)
    if (r < 0 || r >= rows_)
      throw Error("stag::Seq2SeqGenerator::keep_rows: row " + std::to_string(r) + " of " +
                  std::to_string(rows_));
  Session& old = *decode_;
  const std::int64_t old_rows = rows_;
  const auto rows = static_cast<std::int64_t>(from.size());
  Session& now = decode_session(rows, max_len_, src_len_);
  if (&now == &old) {  // as many rows: only the identity is a no-op here
    for (std::int64_t r = 0; r < rows; ++r)
      if (from[static_cast<std::size_t>(r)] != r)
        throw Error(
            "stag::Seq2SeqGenerator::keep_rows: keeping every row in another order is a "
            "reorder (use reorder), not a smaller batch");
    return;
  }
  for (const std::vector<std::string>* names : {&memory_names_, &cache_names_})
    for (const std::string& name : *names) {
      const Array src = old.params().at(name);
      Array dst = now.params().at(name);  // shares the session's storage
      const std::size_t row_bytes = src.bytes() / static_cast<std::size_t>(old_rows);
      for (std::int64_t r = 0; r < rows; ++r)
        std::memcpy(static_cast<std::byte*>(dst.raw()) + static_cast<std::size_t>(r) * row_bytes,
                    static_cast<const std::byte*>(src.raw()) +
                        static_cast<std::size_t>(from[static_cast<std::size_t>(r)]) * row_bytes,
                    row_bytes);
    }
  Array keep(DType::boolean, {rows, src_len_});
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(keep.data<bool>() + r * src_len_,
                src_keep_.data<bool>() + from[static_cast<std::size_t>(r)] * src_len_,
                static_cast<std::size_t>(src_len_) * sizeof(bool));
  src_keep_ = std::move(keep);
  decode_ = &now;
}

std::string Seq2SeqGenerator::profile_report(int top) const {
  return decode_ ? decode_->profile_report(top) : "no decode step has run\n";
}

Array Seq2SeqGenerator::step(const Array& ids, std::span<const std::int32_t> pos) {
  if (!decode_) throw Error("stag::Seq2SeqGenerator::step: encode the sources first");
  if (ids.rank() != 2 || ids.dim(0) != rows_ || ids.dtype() != DType::i32 ||
      static_cast<std::int64_t>(pos.size()) != rows_)
    throw Error("stag::Seq2SeqGenerator::step: expected ids [" + std::to_string(rows_) +
                ", chunk] i32 and " + std::to_string(rows_) + " positions, got " + ids.describe() +
                " and " + std::to_string(pos.size()));
  const std::int64_t chunk = ids.dim(1);
  for (std::int64_t r = 0; r < rows_; ++r) {
    const std::int32_t p = pos[static_cast<std::size_t>(r)];
    if (p < -1 || (p >= 0 && p + chunk > max_len_))
      throw Error("stag::Seq2SeqGenerator::step: row " + std::to_string(r) + " at position " +
                  std::to_string(p) + " with " + std::to_string(chunk) +
                  " tokens does not fit the cache of " + std::to_string(max_len_));
    for (std::int64_t j = 0; p >= 0 && j < chunk; ++j) {
      const std::int32_t id = ids.data<std::int32_t>()[r * chunk + j];
      if (id < 0 || id >= graphs_.tgt_vocab)
        throw Error("stag::Seq2SeqGenerator::step: row " + std::to_string(r) + " has id " +
                    std::to_string(id) + ", outside the target vocabulary of " +
                    std::to_string(graphs_.tgt_vocab));
    }
  }
  decode_->set_inputs({{"ids", ids},
                       {"pos", Array::from_vector<std::int32_t>(
                                   {rows_}, std::vector<std::int32_t>(pos.begin(), pos.end()))},
                       {"src_keep", src_keep_}});
  decode_->run();
  return decode_->get("logits");
}

void Seq2SeqGenerator::reorder(std::span<const std::int32_t> parents, std::int64_t positions) {
  if (!decode_ || static_cast<std::int64_t>(parents.size()) != rows_)
    throw Error("stag::Seq2SeqGenerator::reorder: one parent row per decoder row");
  reorder_cache_rows(*decode_, cache_names_, parents, positions);
}

std::vector<std::vector<Hypothesis>> Seq2SeqGenerator::generate(
    const std::vector<std::vector<std::int32_t>>& sources, std::span<const std::size_t> rows,
    const Seq2SeqGenerateOptions& o) {
  if (rows.empty()) throw Error("stag::Seq2SeqGenerator: no rows to decode");
  if (o.max_new < 0 || o.max_src_len < 0)
    throw Error("stag::Seq2SeqGenerator: max_new and max_src_len must not be negative");
  for (std::size_t r : rows)
    if (r < sources.size() && sources[r].empty())
      throw Error("stag::Seq2SeqGenerator: source " + std::to_string(r) +
                  " is empty (nothing to translate)");
  if (o.on_token && o.search.beam_size != 1)
    throw Error(
        "stag::Seq2SeqGenerator: on_token streams greedy decoding (beam_size 1); a beam "
        "search's hypotheses change until it ends: use on_result");
  std::vector<std::vector<Hypothesis>> out;
  out.reserve(rows.size());
  const std::int64_t k = o.search.beam_size;
  for (std::size_t at = 0; at < rows.size(); at += opts_.batch_rows) {
    const std::span<const std::size_t> part =
        rows.subspan(at, std::min(opts_.batch_rows, rows.size() - at));
    // pad_batch refuses rows out of range, naming the index. Sources are padded to a multiple
    // of 8 so that batches share a few decode sessions.
    const data::PaddedIds src =
        data::pad_batch(sources, part, {.max_len = o.max_src_len, .multiple_of = 8});
    BeamSearchOptions so = o.search;
    so.max_new = static_cast<int>(o.max_new > 0 ? o.max_new : src.ids.dim(1) + 6);
    BeamSearch search(part.size(), so);  // checks the options before any work
    encode(src.ids, src.keep, k, so.max_new);
    std::vector<std::size_t> emitted(part.size(), 0);
    std::vector<char> reported(part.size(), 0);
    std::vector<std::int32_t> pos;
    while (!search.done()) {
      pos.resize(static_cast<std::size_t>(rows_));
      for (std::size_t r = 0; r < pos.size(); ++r) pos[r] = search.live()[r] ? search.step() : -1;
      const Array logits =
          step(Array::from_vector<std::int32_t>({rows_, 1}, search.tokens()), pos);  // [R, 1, V]
      search.advance({logits.data<float>(), static_cast<std::size_t>(logits.numel())},
                     logits.dim(2));
      if (!search.done()) reorder(search.parents(), search.step());
      for (std::size_t slot = 0; slot < search.batch(); ++slot) {
        const std::size_t item = search.items()[slot];
        // Greedy: one row per slot, whose ids grow by one per step until it ends.
        const std::vector<std::int32_t>& ids = search.row_ids(slot);
        for (; o.on_token && emitted[item] < ids.size(); ++emitted[item])
          if (!o.on_token({.row = at + item,
                           .index = emitted[item],
                           .id = ids[emitted[item]],
                           .text = {}})) {
            search.stop(slot);
            emitted[item] = ids.size();
          }
        if (o.on_result && search.slot_done(slot) && !reported[item]) {
          reported[item] = 1;
          o.on_result(at + item, search.results(slot));
        }
      }
      if (o.shrink && !search.done() && search.batch() > 1 &&
          2 * search.items_searching() <= search.batch())
        keep_rows(search.compact());
    }
    for (std::vector<Hypothesis>& h : search.results()) out.push_back(std::move(h));
  }
  return out;
}

std::vector<std::vector<std::int32_t>> Seq2SeqGenerator::generate_ids(
    const std::vector<std::vector<std::int32_t>>& sources, std::span<const std::size_t> rows,
    const Seq2SeqGenerateOptions& options) {
  std::vector<std::vector<std::int32_t>> out;
  for (std::vector<Hypothesis>& h : generate(sources, rows, options))
    out.push_back(h.empty() ? std::vector<std::int32_t>{} : std::move(h.front().ids));
  return out;
}

}  // namespace stag

// Generator: checkpoint loading, the cached decode loop, and its timing (the tokenisers a
// checkpoint names: text_tokenizer.cpp).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>

namespace stag {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A checkpoint fine-tuned from a Hugging Face folder: config "tokenizer" is {"kind": "hf",
// "folder", "bos_id", "eos_id", "add_bos"} (hf::checkpoint_tokenizer_json). The tokeniser comes
// from `override_path` or the folder; the ids from the object (checkpoints written before
// it held them: from the folder's config.json).
struct HfCheckpointText {
  TextTokenizer tokenizer;
  std::int32_t bos_id = -1, eos_id = -1;
  bool add_bos = false;
};

HfCheckpointText hf_checkpoint_text(const std::string& checkpoint, const nlohmann::json& ref,
                                    const std::string& override_path, std::int32_t vocab) {
  namespace fs = std::filesystem;
  const std::string where = "stag: checkpoint " + checkpoint;
  if (!ref.contains("folder") || !ref["folder"].is_string())
    throw Error(where + ": its config's tokenizer " + ref.dump() + " names no \"folder\"");
  fs::path folder = ref["folder"].get<std::string>();
  if (folder.is_relative()) folder = fs::path(checkpoint).parent_path() / folder;
  const bool ids_recorded = ref.contains("eos_id") && ref.contains("bos_id");
  const bool need_folder = override_path.empty() || !ids_recorded;
  std::optional<hf::FolderText> text;
  if (need_folder) {
    if (!fs::is_directory(folder))
      throw Error(where + " was fine-tuned from the Hugging Face folder " + folder.string() +
                  ", which is not there any more: its tokeniser" +
                  (ids_recorded ? " comes" : " and <bos> / <eos> ids come") +
                  " from it (give the folder, or its tokenizer.json, as the tokeniser: "
                  "stag-generate --tokenizer, GeneratorOptions::tokenizer_path)");
    text = hf::folder_text(folder, vocab);
  }
  if (override_path.empty() && !text->tokenizer)
    throw Error(where + ": the folder it was fine-tuned from, " + folder.string() +
                ", has no tokeniser (no tokenizer.json, and no vocab.json with merges.txt)");
  HfCheckpointText out{.tokenizer = override_path.empty()
                                        ? TextTokenizer(std::move(*text->tokenizer))
                                        : TextTokenizer::load(override_path)};
  if (ids_recorded) {
    const auto id = [&](const char* key) -> std::int32_t {
      const nlohmann::json& v = ref[key];
      if (v.is_null()) return -1;
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= vocab)
        throw Error(where + ": its config's tokenizer." + key + " " + v.dump() +
                    " is not an id of the model's vocabulary [0, " + std::to_string(vocab) + ")");
      return v.get<std::int32_t>();
    };
    out.bos_id = id("bos_id");
    out.eos_id = id("eos_id");
    out.add_bos =
        ref.contains("add_bos") && ref["add_bos"].is_boolean() && ref["add_bos"].get<bool>();
  } else {
    out.bos_id = text->bos_id;
    out.eos_id = text->eos_id;
    out.add_bos = text->add_bos;
  }
  return out;
}

}  // namespace

// ---- Generator ------------------------------------------------------------------------------

Generator::Generator(const std::string& checkpoint, GeneratorOptions opts)
    : opts_(std::move(opts)) {
  info_ = read_checkpoint_info(checkpoint);
  const LmConfig config = [&] {
    try {
      return lm_config_from_json(info_.config_json);
    } catch (const Error& e) {
      throw Error("stag: checkpoint " + checkpoint + ": " + e.what());
    }
  }();
  preset_ = &require_lm_preset(config, opts_.presets);
  // The model's parameters, created by a throwaway store of the graph's parameter nodes.
  const GraphView& g = preset_->decode_for(opts_.weights);
  Bindings b;
  for (const SymEntry& s : g.syms) b.set(s.id, 1);  // the parameters have static dims only
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & kFlagParam)) continue;
    weights_.emplace(g.name(n), Array(g.node(n).dtype, concrete_dims(g.shape(n), b)));
  }
  // Optimizer state (…adam_m, …momentum) in a training checkpoint is not needed here.
  info_ = load_checkpoint(
      checkpoint, weights_,
      {.allow_missing = false, .allow_unexpected = true, .allow_nonfinite = opts_.allow_nonfinite});
  const nlohmann::json config_obj = nlohmann::json::parse(info_.config_json, nullptr, false);
  const bool from_hf = config_obj.is_object() && config_obj.contains("tokenizer") &&
                       config_obj["tokenizer"].is_object() &&
                       config_obj["tokenizer"].value("kind", "") == "hf";
  if (from_hf) {
    HfCheckpointText t = hf_checkpoint_text(checkpoint, config_obj["tokenizer"],
                                            opts_.tokenizer_path, preset_->config->vocab);
    tokenizer_.emplace(std::move(t.tokenizer));
    opts_.bos_id = t.bos_id;
    opts_.eos_id = t.eos_id;
    opts_.first_token_id = 0;  // special ids are anywhere in a Hugging Face vocabulary
    add_bos_ = t.add_bos;
  } else {
    tokenizer_ = checkpoint_tokenizer(checkpoint, info_.config_json, info_.state.extra,
                                      opts_.tokenizer_path);
    if (config_obj.is_object() && config_obj.contains("add_bos") &&
        config_obj["add_bos"].is_boolean())
      add_bos_ = config_obj["add_bos"].get<bool>();
  }
  if (opts_.add_bos) add_bos_ = *opts_.add_bos;
  if (tokenizer_->vocab_size() > static_cast<std::size_t>(preset_->config->vocab))
    throw Error("stag: checkpoint " + checkpoint + ": the tokeniser has " +
                std::to_string(tokenizer_->vocab_size()) + " ids but the model only " +
                std::to_string(preset_->config->vocab));
}

Generator::Generator(const LmPreset& preset, NamedArrays weights,
                     std::optional<TextTokenizer> tokenizer, GeneratorOptions opts)
    : preset_(&preset),
      weights_(std::move(weights)),
      tokenizer_(std::move(tokenizer)),
      opts_(std::move(opts)),
      add_bos_(opts_.add_bos.value_or(false)) {
  // Weights in the graph's dtypes (f32 ones rounded to bf16 once, for decode_bf16), so that
  // every session shares them instead of converting its own copy.
  const GraphView& g = preset_->decode_for(opts_.weights);
  for (auto& [name, a] : weights_) {
    const int n = g.find(name);
    if (n >= 0 && (g.node(n).flags & kFlagParam) && a.dtype() != g.node(n).dtype)
      a = a.to(g.node(n).dtype);
  }
}

Generator::~Generator() = default;

const Session& Generator::session() const {
  if (!session_) throw Error("stag::Generator: no session yet (nothing generated)");
  return *session_;
}

void Generator::check_ids(std::span<const std::int32_t> ids, const std::string& what) const {
  const std::int64_t vocab = preset_->config->vocab;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw Error("stag::Generator: " + what + ": id " + std::to_string(ids[i]) + " at position " +
                  std::to_string(i) + " is outside the model's vocabulary [0, " +
                  std::to_string(vocab) + ")");
}

namespace {

// A decode-step session of `batch` rows and a cache of `len` positions, with the weights set
// (the caches start at zero).
std::unique_ptr<Session> decode_session(const LmPreset& preset, const NamedArrays& weights,
                                        const GeneratorOptions& opts, std::int64_t len,
                                        std::int64_t batch) {
  // NOTE: the caches grow with max_len and the batch; a size that cannot fit in memory is
  // refused here, by its size, rather than failing somewhere inside the session's allocation.
  const GraphView& g = preset.decode_for(opts.weights);
  {
    Bindings b;
    for (const SymEntry& e : g.syms)
      b.set(e.id, e.name == "max_len" ? len : (e.name == "batch" ? batch : 1));
    double cache_bytes = 0;
    for (int n = 0; n < g.size(); ++n) {
      if (!(g.node(n).flags & (kFlagParam | kFlagState)) ||
          g.name(n).find("_cache") == std::string_view::npos)
        continue;
      double k = static_cast<double>(dtype_size(g.node(n).dtype));
      for (std::int64_t d : concrete_dims(g.shape(n), b)) k *= static_cast<double>(d);
      cache_bytes += k;
    }
    const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<double>(::sysconf(_SC_PAGE_SIZE));
    if (cache_bytes > memory / 2) {
      char text[200];
      std::snprintf(text, sizeof text,
                    "%.1f GiB of key/value cache for %lld row(s), more than half of this "
                    "machine's %.1f GiB",
                    cache_bytes / (1 << 30), static_cast<long long>(batch), memory / (1 << 30));
      throw Error("stag::Generator: a cache of " + std::to_string(len) +
                  " positions (max_len) needs " + text +
                  "; give a smaller max_len (--max-len), or 0 to size it by the prompt and "
                  "the new tokens");
    }
  }
  SessionOptions so;
  so.device = opts.device;
  so.threads = opts.threads;
  so.schedule = opts.schedule;
  so.dims = {{"batch", batch}, {"max_len", len}};
  // The session uses the weights' storage (Array copies share it): no second copy of a model,
  // and every session the Generator makes (another cache size or batch) shares the one. A
  // weight of another dtype or shape is copied in below instead (converted, or refused).
  for (const auto& [name, a] : weights) {
    const int n = g.find(name);
    if (n >= 0 && (g.node(n).flags & kFlagParam) && a.dtype() == g.node(n).dtype &&
        a.dims() == concrete_dims(g.shape(n), Bindings{}))
      so.shared_params.emplace(name, a);
  }
  auto s = std::make_unique<Session>(g, so);
  // Every parameter must come from the weights (the caches start at zero).
  std::vector<std::string> missing;
  for (const auto& [name, a] : s->params()) {
    const int n = s->graph().find(name);
    if (n >= 0 && (s->graph().node(n).flags & kFlagParam) && !weights.count(name))
      missing.push_back(name);
  }
  if (!missing.empty())
    throw Error("stag::Generator: no weights for " + std::to_string(missing.size()) +
                " parameter(s), e.g. '" + missing.front() + "'");
  for (const auto& [name, a] : weights) {
    if (!s->params().count(name))
      throw Error("stag::Generator: weight '" + name + "' is not a parameter of the " +
                  std::string(preset.name) + " model");
    if (!so.shared_params.count(name)) s->set_param(name, a);
  }
  return s;
}

}  // namespace

namespace {
// A model with learned positions (GPT-2) has no row for a position past its table.
void check_position_table(const LmConfig& c, std::int64_t positions) {
  if (c.max_positions > 0 && positions > c.max_positions)
    throw Error("stag::Generator: " + std::to_string(positions) +
                " positions (prompt and new tokens) do not fit the model's table of " +
                std::to_string(c.max_positions) +
                " learned positions (max_positions; Hugging Face's n_positions): use a shorter "
                "prompt or fewer new tokens");
}
}  // namespace

void Generator::reserve(std::int64_t positions, std::int64_t batch) {
  if (batch < 1) throw Error("stag::Generator: the batch needs at least one row");
  check_position_table(*preset_->config, positions);
  if (session_ && batch == batch_ && positions <= max_len_) return;
  std::int64_t len = (positions + 63) / 64 * 64;
  if (opts_.max_len > 0) {
    if (positions > opts_.max_len)
      throw Error("stag::Generator: " + std::to_string(positions) +
                  " positions do not fit the cache of max_len " + std::to_string(opts_.max_len) +
                  "; use a shorter prompt, fewer new tokens or a larger max_len");
    len = opts_.max_len;
  }
  session_.reset();  // the old caches go before the new ones are made
  session_ = decode_session(*preset_, weights_, opts_, len, batch);
  max_len_ = len;
  batch_ = batch;
}

void Generator::shrink_batch(const std::vector<std::size_t>& rows) {
  auto s =
      decode_session(*preset_, weights_, opts_, max_len_, static_cast<std::int64_t>(rows.size()));
  for (const auto& [name, old] : session_->params()) {
    const int n = session_->graph().find(name);
    if (n < 0 || !(session_->graph().node(n).flags & kFlagState)) continue;
    // A cache [batch, ...]: row r of the new one is row rows[r] of the old one.
    std::vector<std::int64_t> dims = old.dims();
    const std::size_t row_bytes = old.bytes() / static_cast<std::size_t>(dims[0]);
    dims[0] = static_cast<std::int64_t>(rows.size());
    Array a(old.dtype(), dims);
    for (std::size_t r = 0; r < rows.size(); ++r)
      std::memcpy(static_cast<std::byte*>(a.raw()) + r * row_bytes,
                  static_cast<const std::byte*>(old.raw()) + rows[r] * row_bytes, row_bytes);
    s->set_param(name, a);
  }
  session_ = std::move(s);
  batch_ = static_cast<std::int64_t>(rows.size());
  // The one-token plan of the new batch, by a step that writes and reads nothing.
  step(Array(DType::i32, {batch_, 1}), std::vector<std::int32_t>(rows.size(), -1));
}

Array Generator::step(std::span<const std::int32_t> ids, std::int64_t pos) {
  if (ids.empty()) throw Error("stag::Generator::step: no ids (a step feeds at least one token)");
  if (pos < 0 || pos > std::numeric_limits<std::int32_t>::max())
    throw Error("stag::Generator::step: position " + std::to_string(pos) +
                " is negative or too large");
  const std::int32_t p = static_cast<std::int32_t>(pos);
  return step(Array::from_vector<std::int32_t>({1, static_cast<std::int64_t>(ids.size())},
                                               std::vector<std::int32_t>(ids.begin(), ids.end())),
              std::span<const std::int32_t>(&p, 1));
}

Array select_positions(std::span<const std::int32_t> at, std::int64_t chunk) {
  const auto batch = static_cast<std::int64_t>(at.size());
  Array s(DType::f32, {batch, 1, chunk});  // zeros
  float* p = s.data<float>();
  for (std::int64_t b = 0; b < batch; ++b) {
    if (at[static_cast<std::size_t>(b)] < 0 || at[static_cast<std::size_t>(b)] >= chunk)
      throw Error("stag::select_positions: position " +
                  std::to_string(at[static_cast<std::size_t>(b)]) + " of row " + std::to_string(b) +
                  " is outside the step's " + std::to_string(chunk) + " tokens");
    p[b * chunk + at[static_cast<std::size_t>(b)]] = 1.0f;
  }
  return s;
}

Array select_all_positions(std::int64_t batch, std::int64_t chunk) {
  Array s(DType::f32, {batch, chunk, chunk});  // zeros
  float* p = s.data<float>();
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t t = 0; t < chunk; ++t) p[(b * chunk + t) * chunk + t] = 1.0f;
  return s;
}

Array Generator::step(const Array& ids, std::span<const std::int32_t> pos) {
  return step(ids, pos, {});
}

Array Generator::step(const Array& ids, std::span<const std::int32_t> pos,
                      std::span<const std::int32_t> at) {
  if (ids.rank() != 2 || ids.dtype() != DType::i32 || ids.dim(1) < 1)
    throw Error("stag::Generator::step: ids must be i32 [batch, chunk] with chunk >= 1, got " +
                ids.describe());
  const std::int64_t batch = ids.dim(0), chunk = ids.dim(1);
  if (static_cast<std::int64_t>(pos.size()) != batch)
    throw Error("stag::Generator::step: " + std::to_string(pos.size()) + " positions for " +
                std::to_string(batch) + " rows of ids");
  for (std::int64_t b = 0; b < batch; ++b)
    check_ids(std::span<const std::int32_t>(ids.data<std::int32_t>() + b * chunk,
                                            static_cast<std::size_t>(chunk)),
              "step ids of row " + std::to_string(b));
  for (const std::int32_t p : pos)
    if (p >= 0) check_position_table(*preset_->config, p + chunk);
  // The first step sizes the cache; later ones never grow it (that would drop the cache):
  // a position past the end is cache_write's error.
  if (!session_ || batch != batch_) {
    std::int64_t last = 0;
    for (std::int32_t p : pos) last = std::max<std::int64_t>(last, p);
    reserve(last + chunk, batch);
  }
  if (!at.empty() && static_cast<std::int64_t>(at.size()) != batch)
    throw Error("stag::Generator::step: " + std::to_string(at.size()) + " output positions for " +
                std::to_string(batch) + " rows of ids");
  session_->set_input("ids", ids);
  session_->set_input(
      "select", at.empty() ? select_all_positions(batch, chunk) : select_positions(at, chunk));
  session_->set_input("pos", Array::from_vector<std::int32_t>(
                                 {batch}, std::vector<std::int32_t>(pos.begin(), pos.end())));
  session_->run();
  return session_->get("logits");
}

GenerateResult Generator::generate(std::string_view prompt, const GenerateOptions& o) {
  if (!tokenizer_) throw Error("stag::Generator: no tokeniser; use generate_ids");
  GenerateResult r = generate_ids(tokenizer_->encode(prompt), o);
  r.text = tokenizer_->decode(r.new_ids);
  return r;
}

GenerateResult Generator::generate_ids(std::vector<std::int32_t> prompt, const GenerateOptions& o) {
  std::vector<std::vector<std::int32_t>> prompts;
  prompts.push_back(std::move(prompt));
  return std::move(generate_ids_batch(std::move(prompts), o).front());
}

std::vector<GenerateResult> Generator::generate_batch(const std::vector<std::string>& prompts,
                                                      const GenerateOptions& o,
                                                      const std::vector<int>& max_new_tokens) {
  if (!tokenizer_) throw Error("stag::Generator: no tokeniser; use generate_ids_batch");
  std::vector<std::vector<std::int32_t>> ids;
  for (const std::string& p : prompts) ids.push_back(tokenizer_->encode(p));
  std::vector<GenerateResult> r = generate_ids_batch(std::move(ids), o, max_new_tokens);
  for (GenerateResult& x : r) x.text = tokenizer_->decode(x.new_ids);
  return r;
}

std::vector<GenerateResult> Generator::generate_ids_batch(
    std::vector<std::vector<std::int32_t>> prompts, const GenerateOptions& o,
    const std::vector<int>& max_new_tokens) {
  if (prompts.empty()) throw Error("stag::Generator: no prompts to generate from");
  if (o.max_new_tokens < 0) throw Error("stag::Generator: max_new_tokens must be >= 0");
  if (o.prefill_chunk < 0) throw Error("stag::Generator: prefill_chunk must be >= 0");
  if (!max_new_tokens.empty() && max_new_tokens.size() != prompts.size())
    throw Error("stag::Generator: " + std::to_string(max_new_tokens.size()) +
                " max_new_tokens for " + std::to_string(prompts.size()) + " prompts");
  const std::size_t n = prompts.size();
  const bool bos = o.add_bos.value_or(add_bos_);
  std::vector<GenerateResult> res(n);
  std::vector<int> limit(n);
  std::int64_t p_max = 0, need = 0;
  for (std::size_t b = 0; b < n; ++b) {
    std::vector<std::int32_t>& p = prompts[b];
    check_ids(p, n == 1 ? std::string("the prompt") : "prompt " + std::to_string(b));
    // An empty prompt starts a document: after <bos> when the model was trained with it, else
    // after <eos> (stag's corpora end every document with <eos>).
    if (bos || p.empty()) {
      const std::int32_t start = bos ? opts_.bos_id : opts_.eos_id;
      if (start < 0)
        throw Error(std::string("stag::Generator: ") +
                    (bos ? "add_bos is set, but the model has no <bos> id"
                         : "the prompt is empty and the model has no <eos> id to start from") +
                    " (GeneratorOptions::bos_id / eos_id)");
      p.insert(p.begin(), start);
    }
    limit[b] = max_new_tokens.empty() ? o.max_new_tokens : max_new_tokens[b];
    if (limit[b] < 0)
      throw Error("stag::Generator: max_new_tokens of prompt " + std::to_string(b) +
                  " must be >= 0");
    res[b].prompt_ids = p;
    const auto len = static_cast<std::int64_t>(p.size());
    p_max = std::max(p_max, len);
    need = std::max(need, len + std::max(limit[b] - 1, 0));  // the last new token is never fed
  }
  need = std::max(need, p_max);
  const std::int64_t chunk =
      o.prefill_chunk > 0 ? std::min<std::int64_t>(o.prefill_chunk, p_max) : p_max;
  const std::int64_t vocab_limit =
      tokenizer_ ? static_cast<std::int64_t>(tokenizer_->vocab_size()) : 0;

  // Setup: the cache and one plan per step length this call uses, made by steps in which
  // every row is inactive (they write and read nothing).
  auto t0 = Clock::now();
  reserve(need, static_cast<std::int64_t>(n));
  std::set<std::int64_t> lengths{1, chunk};
  if (p_max % chunk != 0) lengths.insert(p_max % chunk);
  const std::vector<std::int32_t> idle(n, -1);
  const std::vector<std::int32_t> first_out(n, 0);
  for (std::int64_t len : lengths)
    step(Array(DType::i32, {static_cast<std::int64_t>(n), len}), idle, first_out);
  for (GenerateResult& r : res) r.setup_seconds = seconds_since(t0);

  // Each row: the tokens in its cache (the position of the next token fed), and whether it
  // has stopped. `live`: the prompts in the session's batch rows, in order.
  std::vector<std::int64_t> fed(n, 0);
  std::vector<char> done(n, 0);
  std::vector<Clock::time_point> first(n);
  std::vector<std::size_t> live(n);
  for (std::size_t b = 0; b < n; ++b) {
    live[b] = b;
    done[b] = limit[b] == 0;
  }
  const auto t_start = Clock::now();
  std::string piece;
  while (true) {
    std::int64_t max_rem = 0;
    bool running = false;
    for (std::size_t b : live) {
      if (done[b]) continue;
      running = true;
      max_rem = std::max(max_rem, static_cast<std::int64_t>(prompts[b].size()) - fed[b]);
    }
    if (!running) break;
    // Prefill steps are `chunk` wide (the last one what is left); then one token per step.
    const std::int64_t width = max_rem > 0 ? std::min(chunk, max_rem) : 1;
    const auto rows = static_cast<std::int64_t>(live.size());
    Array ids(DType::i32, {rows, width});
    std::int32_t* id = ids.data<std::int32_t>();
    std::vector<std::int32_t> pos(live.size(), -1);
    std::vector<std::int64_t> fresh(live.size(), 0);  // tokens each row feeds this step
    std::vector<std::int32_t> out(live.size(), 0);    // its last one: the logits wanted
    for (std::size_t i = 0; i < live.size(); ++i) {
      const std::size_t b = live[i];
      if (done[b]) continue;
      const auto plen = static_cast<std::int64_t>(prompts[b].size());
      if (fed[b] < plen) {
        // Prompt tokens; a shorter remainder is padded at the right (the padding's cache
        // rows lie past the row's end: never attended to, overwritten by its next tokens).
        fresh[i] = std::min(width, plen - fed[b]);
        std::copy_n(prompts[b].begin() + fed[b], fresh[i],
                    id + static_cast<std::int64_t>(i) * width);
      } else {
        // The row's last sampled token, while longer prompts prefill: it waits for a step
        // whose padding fits the cache.
        if (fed[b] + width > max_len_) continue;
        fresh[i] = 1;
        id[static_cast<std::int64_t>(i) * width] = res[b].new_ids.back();
      }
      pos[i] = static_cast<std::int32_t>(fed[b]);
      out[i] = static_cast<std::int32_t>(fresh[i] - 1);
    }
    const Array logits = step(ids, pos, out);  // [rows, 1, vocab]
    const std::int64_t vocab = logits.dim(-1);
    for (std::size_t i = 0; i < live.size(); ++i) {
      const std::size_t b = live[i];
      if (fresh[i] == 0) continue;
      fed[b] += fresh[i];
      if (fed[b] < static_cast<std::int64_t>(prompts[b].size())) continue;  // prompt not done
      GenerateResult& r = res[b];
      const float* row = logits.data<float>() + static_cast<std::int64_t>(i) * vocab;
      r.new_ids.push_back(sample_token(std::span<const float>(row, static_cast<std::size_t>(vocab)),
                                       o.sample, r.new_ids.size(), vocab_limit));
      if (r.new_ids.size() == 1) {
        first[b] = Clock::now();
        r.prefill_seconds = std::chrono::duration<double>(first[b] - t_start).count();
        r.prefill_tokens = static_cast<std::int64_t>(prompts[b].size());
      } else {
        ++r.decode_tokens;
      }
      bool stop = static_cast<int>(r.new_ids.size()) >= limit[b] ||
                  (o.stop_at_eos && r.new_ids.back() == opts_.eos_id);
      if (o.on_token) {
        if (tokenizer_)
          piece = tokenizer_->decode(std::span<const std::int32_t>(&r.new_ids.back(), 1));
        if (!o.on_token(TokenEvent{b, r.new_ids.size() - 1, r.new_ids.back(), piece})) stop = true;
      }
      if (stop) {
        done[b] = 1;
        r.decode_seconds = seconds_since(first[b]);
      }
    }
    // With half the rows or fewer still running, the running rows move to a smaller batch,
    // so that stopped rows stop costing matmul work too.
    std::vector<std::size_t> keep_rows, keep_prompts;
    for (std::size_t i = 0; i < live.size(); ++i)
      if (!done[live[i]]) keep_rows.push_back(i), keep_prompts.push_back(live[i]);
    if (!keep_rows.empty() && live.size() > 1 && 2 * keep_rows.size() <= live.size()) {
      shrink_batch(keep_rows);
      live = keep_prompts;
    }
  }
  return res;
}

std::vector<Hypothesis> Generator::beam_search(std::vector<std::int32_t> prompt,
                                               BeamSearchOptions o) {
  if (prompt.empty())
    throw Error("stag::Generator::beam_search: the prompt is empty (give at least <bos>)");
  check_ids(prompt, "the prompt");
  if (o.vocab_limit == 0 && tokenizer_)
    o.vocab_limit = static_cast<std::int32_t>(tokenizer_->vocab_size());
  // The model's own <eos> and <bos> (stag's, or a Hugging Face config.json's), and the ids its
  // vocabulary may produce.
  if (opts_.eos_id < 0)
    throw Error(
        "stag::Generator::beam_search: the model has no end-of-sequence id (config.json's "
        "eos_token_id) for a hypothesis to finish with");
  o.eos_id = opts_.eos_id;
  if (opts_.bos_id >= 0) o.bos_id = opts_.bos_id;
  if (o.first_id < 0) o.first_id = opts_.first_token_id;
  BeamSearch search(1, o);  // checks the options before any work
  const auto k = static_cast<std::int64_t>(search.rows());
  const auto n = static_cast<std::int64_t>(prompt.size());
  reserve(n + o.max_new, k);
  std::vector<std::string> caches;
  for (const auto& [name, a] : session_->params()) {
    const int node = session_->graph().find(name);
    if (node >= 0 && (session_->graph().node(node).flags & kFlagState)) caches.push_back(name);
  }
  // The prompt in every row (so every row's cache holds it), its last position's logits.
  Array ids(DType::i32, {k, n});
  for (std::int64_t r = 0; r < k; ++r)
    std::copy(prompt.begin(), prompt.end(), ids.data<std::int32_t>() + r * n);
  Array logits = step(ids, std::vector<std::int32_t>(static_cast<std::size_t>(k), 0),
                      std::vector<std::int32_t>(static_cast<std::size_t>(k),
                                                static_cast<std::int32_t>(n - 1)));  // [k, 1, V]
  const std::int64_t v = logits.dim(2);
  search.advance({logits.data<float>(), static_cast<std::size_t>(logits.numel())}, v);
  std::vector<std::int32_t> pos(static_cast<std::size_t>(k));
  while (!search.done()) {
    // Positions 0 .. at-1 hold the prompt and the tokens fed so far; the next one goes at `at`.
    const std::int64_t at = n + search.step() - 1;
    reorder_cache_rows(*session_, caches, search.parents(), at);
    for (std::int64_t r = 0; r < k; ++r)
      pos[static_cast<std::size_t>(r)] =
          search.live()[static_cast<std::size_t>(r)] ? static_cast<std::int32_t>(at) : -1;
    logits = step(Array::from_vector<std::int32_t>({k, 1}, search.tokens()), pos);
    search.advance({logits.data<float>(), static_cast<std::size_t>(logits.numel())}, v);
  }
  return search.results()[0];
}

}  // namespace stag

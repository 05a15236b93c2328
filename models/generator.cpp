// Generator: checkpoint and tokeniser loading, the cached decode loop, and its timing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/generator.hpp>

namespace stag {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// A tokeniser given as JSON text or as a path (relative to `dir`).
TextTokenizer tokenizer_from(const nlohmann::json& v, const std::filesystem::path& dir,
                             const std::string& where) {
  if (v.is_object()) return TextTokenizer::from_json(v.dump());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (!s.empty() && s.front() == '{') return TextTokenizer::from_json(s);
    const std::filesystem::path p =
        std::filesystem::path(s).is_absolute() ? std::filesystem::path(s) : dir / s;
    return TextTokenizer::load(p.string());
  }
  throw Error("stag: " + where + ": \"tokenizer\" must be a tokeniser object or a path, got " +
              v.dump());
}

}  // namespace

// ---- TextTokenizer --------------------------------------------------------------------------

TextTokenizer TextTokenizer::from_json(std::string_view json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag: tokenizer: invalid JSON: ") + e.what());
  }
  // stag-train wraps the tokeniser: {"kind": "char" | "bpe", "tokenizer": {...}}.
  if (j.is_object() && !j.contains("type") && j.contains("tokenizer") && j["tokenizer"].is_object())
    return from_json(j["tokenizer"].dump());
  if (!j.is_object()) throw Error("stag: tokenizer: the JSON is not an object");
  if (j.contains("type") && !j["type"].is_string())
    throw Error("stag: tokenizer: \"type\" is " + j["type"].dump() +
                ", not a string (expected \"char\" or \"byte-bpe\")");
  const std::string type = j.value("type", "");
  if (type == "char") return TextTokenizer(data::CharTokenizer::from_json(json));
  if (type == "byte-bpe") return TextTokenizer(data::BpeTokenizer::from_json(json));
  throw Error("stag: tokenizer: unknown \"type\" '" + type +
              "' (expected \"char\" or \"byte-bpe\")");
}

TextTokenizer TextTokenizer::load(const std::string& path) {
  try {
    return from_json(data::read_file(path, "tokeniser"));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + path + ")");
  }
}

std::vector<std::int32_t> TextTokenizer::encode(std::string_view text) const {
  return std::visit([&](const auto& t) { return t.encode(text); }, t_);
}
std::string TextTokenizer::decode(std::span<const std::int32_t> ids) const {
  return std::visit([&](const auto& t) { return t.decode(ids); }, t_);
}
std::size_t TextTokenizer::vocab_size() const {
  return std::visit([](const auto& t) { return t.vocab_size(); }, t_);
}
std::string_view TextTokenizer::kind() const {
  return t_.index() == 0 ? "char" : "byte-bpe";
}

TextTokenizer checkpoint_tokenizer(const std::string& checkpoint, const std::string& config_json,
                                   const Metadata& extra, const std::string& override_path) {
  if (!override_path.empty()) return TextTokenizer::load(override_path);
  const std::filesystem::path dir = std::filesystem::path(checkpoint).parent_path();
  const nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (config.is_object() && config.contains("tokenizer"))
    return tokenizer_from(config["tokenizer"], dir, "checkpoint " + checkpoint + " config");
  if (const auto it = extra.find("tokenizer"); it != extra.end())
    return tokenizer_from(nlohmann::json(it->second), dir,
                          "checkpoint " + checkpoint + " metadata extra.tokenizer");
  const std::filesystem::path beside = dir / "tokenizer.json";
  if (std::filesystem::exists(beside)) return TextTokenizer::load(beside.string());
  throw Error("stag: checkpoint " + checkpoint +
              " names no tokeniser (no \"tokenizer\" in its config or metadata, no tokenizer.json "
              "next to it); "
              "pass one with --tokenizer");
}

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
  preset_ = &require_lm_preset(config);
  // The model's parameters, created by a throwaway store of the graph's parameter nodes.
  const GraphView& g = preset_->decode;
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
  tokenizer_ =
      checkpoint_tokenizer(checkpoint, info_.config_json, info_.state.extra, opts_.tokenizer_path);
  const nlohmann::json config_obj = nlohmann::json::parse(info_.config_json, nullptr, false);
  if (config_obj.is_object() && config_obj.contains("add_bos") &&
      config_obj["add_bos"].is_boolean())
    add_bos_ = config_obj["add_bos"].get<bool>();
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
      opts_(std::move(opts)) {}

Generator::~Generator() = default;

const Session& Generator::session() const {
  if (!session_) throw Error("stag::Generator: no session yet (nothing generated)");
  return *session_;
}

void Generator::reserve(std::int64_t positions) {
  if (session_ && positions <= max_len_) return;
  std::int64_t len = (positions + 63) / 64 * 64;
  if (opts_.max_len > 0) {
    if (positions > opts_.max_len)
      throw Error("stag::Generator: " + std::to_string(positions) +
                  " positions do not fit the cache of max_len " + std::to_string(opts_.max_len) +
                  "; use a shorter prompt, fewer new tokens or a larger max_len");
    len = opts_.max_len;
  }
  // NOTE: the caches grow with max_len; a length that cannot fit in memory is refused here,
  // by its size, rather than failing somewhere inside the session's allocation.
  {
    const GraphView& g = preset_->decode;
    Bindings b;
    for (const SymEntry& e : g.syms) b.set(e.id, e.name == "max_len" ? len : 1);
    double cache_bytes = 0;
    for (int n = 0; n < g.size(); ++n) {
      // The caches are the decode graph's state tensors (stag::state: kFlagState, not
      // kFlagParam).
      if (!(g.node(n).flags & kFlagState)) continue;
      double k = static_cast<double>(dtype_size(g.node(n).dtype));
      const ShapeV& shape = g.shape(n);
      for (int i = 0; i < shape.rank; ++i)
        k *= static_cast<double>(concrete_dims(shape, b)[static_cast<std::size_t>(i)]);
      cache_bytes += k;
    }
    const double memory = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                          static_cast<double>(::sysconf(_SC_PAGE_SIZE));
    if (cache_bytes > memory / 2) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "%.1f GiB of key/value cache, more than half of this machine's %.1f GiB",
                    cache_bytes / (1 << 30), memory / (1 << 30));
      throw Error("stag::Generator: a cache of " + std::to_string(len) +
                  " positions (max_len) needs " + text +
                  "; give a smaller max_len (--max-len), or 0 to size it by the prompt and "
                  "the new tokens");
    }
  }
  SessionOptions so;
  so.threads = opts_.threads;
  so.schedule = opts_.schedule;
  so.dims = {{"batch", 1}, {"max_len", len}};
  auto s = std::make_unique<Session>(preset_->decode, so);
  // Every parameter must come from the weights (the caches start at zero).
  std::vector<std::string> missing;
  for (const auto& [name, a] : s->params()) {
    const int n = s->graph().find(name);
    if (n >= 0 && (s->graph().node(n).flags & kFlagParam) && !weights_.count(name))
      missing.push_back(name);
  }
  if (!missing.empty())
    throw Error("stag::Generator: no weights for " + std::to_string(missing.size()) +
                " parameter(s), e.g. '" + missing.front() + "'");
  for (const auto& [name, a] : weights_) {
    if (!s->params().count(name))
      throw Error("stag::Generator: weight '" + name + "' is not a parameter of the " +
                  std::string(preset_->name) + " model");
    s->set_param(name, a);
  }
  session_ = std::move(s);
  max_len_ = len;
}

Array Generator::step(std::span<const std::int32_t> ids, std::int64_t pos) {
  if (ids.empty()) throw Error("stag::Generator::step: no ids");
  // The first step sizes the cache; later ones never grow it (that would drop the cache):
  // a position past the end is cache_write's error.
  if (!session_) reserve(pos + static_cast<std::int64_t>(ids.size()));
  session_->set_input(
      "ids", Array::from_vector<std::int32_t>({1, static_cast<std::int64_t>(ids.size())},
                                              std::vector<std::int32_t>(ids.begin(), ids.end())));
  session_->set_input("pos", Array::from<std::int32_t>({1}, {static_cast<std::int32_t>(pos)}));
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
  if (o.max_new_tokens < 0) throw Error("stag::Generator: max_new_tokens must be >= 0");
  if (o.prefill_chunk < 0) throw Error("stag::Generator: prefill_chunk must be >= 0");
  // An empty prompt starts a document: after <bos> when the model was trained with it, else
  // after <eos> (stag's corpora end every document with <eos>).
  const bool bos = o.add_bos.value_or(add_bos_);
  if (bos || prompt.empty()) prompt.insert(prompt.begin(), bos ? data::kBosId : data::kEosId);
  GenerateResult r;
  r.prompt_ids = prompt;
  const auto p = static_cast<std::int64_t>(prompt.size());
  const std::int64_t total =
      p + std::max(o.max_new_tokens - 1, 0);  // the last new token is never fed
  const std::int64_t chunk = o.prefill_chunk > 0 ? std::min<std::int64_t>(o.prefill_chunk, p) : p;
  const std::int64_t vocab_limit =
      tokenizer_ ? static_cast<std::int64_t>(tokenizer_->vocab_size()) : 0;

  // Setup: the cache and one plan per step length this call uses. Warm-up steps write cache
  // rows that the prefill overwrites before anything reads them.
  auto t0 = Clock::now();
  reserve(total);
  std::set<std::int64_t> lengths{1, chunk};
  if (p % chunk != 0) lengths.insert(p % chunk);
  for (std::int64_t len : lengths)
    if (len <= p) step(std::vector<std::int32_t>(static_cast<std::size_t>(len), prompt[0]), 0);
  r.setup_seconds = seconds_since(t0);

  // Prefill.
  t0 = Clock::now();
  Array logits;
  for (std::int64_t at = 0; at < p; at += chunk) {
    const std::int64_t n = std::min(chunk, p - at);
    logits = step(std::span<const std::int32_t>(prompt).subspan(static_cast<std::size_t>(at),
                                                                static_cast<std::size_t>(n)),
                  at);
  }
  const std::int64_t vocab = logits.dim(-1);
  auto last_row = [&] {
    const float* row = logits.data<float>() + (logits.dim(1) - 1) * vocab;
    return std::span<const float>(row, static_cast<std::size_t>(vocab));
  };
  bool done = o.max_new_tokens == 0;
  if (!done) {
    r.new_ids.push_back(sample_token(last_row(), o.sample, 0, vocab_limit));
    done = o.stop_at_eos && r.new_ids.back() == data::kEosId;
  }
  r.prefill_seconds = seconds_since(t0);
  r.prefill_tokens = p;

  // Decode: one token per step.
  t0 = Clock::now();
  while (!done && static_cast<int>(r.new_ids.size()) < o.max_new_tokens) {
    const std::int64_t pos = p + static_cast<std::int64_t>(r.new_ids.size()) - 1;
    logits = step(std::span<const std::int32_t>(&r.new_ids.back(), 1), pos);
    r.new_ids.push_back(sample_token(last_row(), o.sample, r.new_ids.size(), vocab_limit));
    ++r.decode_tokens;
    done = o.stop_at_eos && r.new_ids.back() == data::kEosId;
  }
  r.decode_seconds = seconds_since(t0);
  return r;
}

}  // namespace stag

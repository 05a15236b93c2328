// Checkpoints on top of safetensors: the run state lives in the header's "__metadata__" under
// "stag.*" keys (and "extra.*" for TrainState::extra); tensors are matched to the store by name.
#include <algorithm>
#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/session.hpp>

namespace stag {
namespace {

constexpr std::string_view kExtraPrefix = "extra.";

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error("stag: checkpoint " + path + ": " + what);
}

template <class Int>
Int parse_int(const Metadata& m, std::string_view key, const std::string& path) {
  const auto it = m.find(key);
  if (it == m.end()) fail(path, "its metadata has no " + std::string(key));
  const std::string& s = it->second;
  Int v{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty())
    fail(path, "metadata " + std::string(key) + " is '" + s + "', not an integer");
  return v;
}

CheckpointInfo info_from(const Metadata& m, std::vector<std::string> names,
                         const std::string& path) {
  if (!m.count("stag.format_version"))
    fail(path,
         "not a stag checkpoint (its metadata has no stag.format_version); read plain "
         "weight files with load_safetensors");
  CheckpointInfo info;
  info.format_version = parse_int<int>(m, "stag.format_version", path);
  if (info.format_version < 1 || info.format_version > kCheckpointVersion)
    fail(path, "format version " + std::to_string(info.format_version) +
                   ", but this build of stag reads versions 1 to " +
                   std::to_string(kCheckpointVersion));
  info.state.step = parse_int<std::int64_t>(m, "stag.step", path);
  info.state.epoch = parse_int<std::int64_t>(m, "stag.epoch", path);
  info.state.seed = parse_int<std::uint64_t>(m, "stag.seed", path);
  info.state.rng_counter = parse_int<std::uint64_t>(m, "stag.rng_counter", path);
  const auto config = m.find("stag.config");
  info.config_json = config == m.end() ? "{}" : config->second;
  for (const auto& [k, v] : m)
    if (k.starts_with(kExtraPrefix)) info.state.extra.emplace(k.substr(kExtraPrefix.size()), v);
  info.tensors = std::move(names);
  std::sort(info.tensors.begin(), info.tensors.end());
  return info;
}

std::vector<std::string> names_of(const NamedArrays& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, a] : tensors) names.push_back(name);
  return names;
}

std::string name_list(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 10;
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i)
    s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > kShown) s += " and " + std::to_string(names.size() - kShown) + " more";
  return s;
}

std::string count_of(std::size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Every way `file` fails to fit `model`, as one error; nothing when it fits.
void check_match(const std::string& path, const NamedArrays& file, const NamedArrays& model,
                 const CheckpointLoadOptions& opts) {
  std::vector<std::string> problems, missing, unexpected;
  auto selected = [&](const std::string& name) { return !opts.select || opts.select(name); };
  for (const auto& [name, want] : model) {
    if (!selected(name)) continue;
    const auto it = file.find(name);
    if (it == file.end()) {
      missing.push_back(name);
      continue;
    }
    const Array& got = it->second;
    if (got.dims() != want.dims())
      problems.push_back("tensor '" + name + "' has shape " + got.shape_string() +
                         ", the model expects " + want.shape_string());
    else if (got.dtype() != want.dtype() && !(is_float(got.dtype()) && is_float(want.dtype())))
      problems.push_back("tensor '" + name + "' has dtype " + std::string(dtype_name(got.dtype())) +
                         ", the model expects " + std::string(dtype_name(want.dtype())));
  }
  for (const auto& [name, a] : file)
    if (selected(name) && !model.count(name)) unexpected.push_back(name);
  if (!missing.empty() && !opts.allow_missing)
    problems.push_back(count_of(missing.size(), "model tensor") +
                       " missing from the checkpoint: " + name_list(missing));
  if (!unexpected.empty() && !opts.allow_unexpected)
    problems.push_back(count_of(unexpected.size(), "checkpoint tensor") +
                       " the model does not have: " + name_list(unexpected));
  if (problems.empty()) return;
  std::string text;
  for (std::size_t i = 0; i < problems.size(); ++i) text += (i ? "; " : "") + problems[i];
  fail(path, text);
}

}  // namespace

void save_checkpoint(const std::string& path, const NamedArrays& store, const TrainState& state,
                     std::string_view config_json) {
  if (!nlohmann::json::accept(config_json))
    fail(path, "the model config to save is not valid JSON: " + std::string(config_json));
  Metadata m;
  m["stag.format_version"] = std::to_string(kCheckpointVersion);
  m["stag.step"] = std::to_string(state.step);
  m["stag.epoch"] = std::to_string(state.epoch);
  m["stag.seed"] = std::to_string(state.seed);
  m["stag.rng_counter"] = std::to_string(state.rng_counter);
  m["stag.config"] = std::string(config_json);
  for (const auto& [k, v] : state.extra) m[std::string(kExtraPrefix) + k] = v;
  save_safetensors(path, store, m);
}

void save_checkpoint(const std::string& path, const Session& session, const TrainState& state,
                     std::string_view config_json) {
  if (!session.has_params())
    fail(path,
         "the session has not created its parameters yet (a parameter has a symbolic dim): "
         "there is nothing to save before its first step");
  save_checkpoint(path, session.params(), state, config_json);
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  const SafetensorsHeader h = read_safetensors_header(path);
  std::vector<std::string> names;
  for (const SafetensorsEntry& e : h.entries) names.push_back(e.name);
  return info_from(h.metadata, std::move(names), path);
}

CheckpointInfo load_checkpoint(const std::string& path, NamedArrays& store,
                               const CheckpointLoadOptions& opts) {
  // NOTE: the whole file is read (and checked) before any value is copied, so a bad file leaves
  // the store untouched; the price is holding the checkpoint in memory twice for a moment.
  const SafetensorsFile file = load_safetensors(path);
  CheckpointInfo info = info_from(file.metadata, names_of(file.tensors), path);
  check_match(path, file.tensors, store, opts);
  for (auto& [name, dst] : store) {
    if (opts.select && !opts.select(name)) continue;
    const auto it = file.tensors.find(name);
    if (it == file.tensors.end()) continue;
    const Array src = it->second.to(dst.dtype());
    std::memcpy(dst.raw(), src.raw(), dst.bytes());
  }
  return info;
}

CheckpointInfo load_checkpoint(const std::string& path, Session& session,
                               const CheckpointLoadOptions& opts) {
  if (!session.has_params())
    fail(path,
         "the session has not created its parameters yet (a parameter has a symbolic dim): "
         "give it in SessionOptions::dims or run a step before loading");
  const SafetensorsFile file = load_safetensors(path);
  CheckpointInfo info = info_from(file.metadata, names_of(file.tensors), path);
  check_match(path, file.tensors, session.params(), opts);
  for (const auto& [name, value] : file.tensors)
    if ((!opts.select || opts.select(name)) && session.params().count(name))
      session.set_param(name, value);
  return info;
}

}  // namespace stag

// Checkpoints on top of safetensors: the run state lives in the header's "__metadata__" under
// "stag.*" keys (and "extra.*" for TrainState::extra); tensors are matched to the store by name.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <stag/runtime/session.hpp>
#include <stag/runtime/train/checkpoint.hpp>

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
  for (const auto& [key, v] :
       {std::pair{"stag.step", info.state.step}, {"stag.epoch", info.state.epoch}})
    if (v < 0)
      fail(path, "metadata " + std::string(key) + " is " + std::to_string(v) +
                     ", but it counts and cannot be negative (is the file edited or damaged?)");
  info.state.seed = parse_int<std::uint64_t>(m, "stag.seed", path);
  info.state.rng_counter = parse_int<std::uint64_t>(m, "stag.rng_counter", path);
  const auto config = m.find("stag.config");
  info.config_json = config == m.end() ? "{}" : config->second;
  if (!nlohmann::json::accept(info.config_json))
    fail(path, "metadata stag.config is not valid JSON (is the file edited or damaged?): " +
                   (info.config_json.size() > 60 ? info.config_json.substr(0, 57) + "..."
                                                 : info.config_json));
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

// At most ten items, then a count of the others.
std::string item_list(const std::vector<std::string>& items) {
  constexpr std::size_t kShown = 10;
  std::string s;
  for (std::size_t i = 0; i < items.size() && i < kShown; ++i) s += (i ? "; " : "") + items[i];
  if (items.size() > kShown) s += "; and " + std::to_string(items.size() - kShown) + " more";
  return s;
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

bool is_optimizer_state(const std::string& name, std::string* param = nullptr) {
  for (std::string_view suffix : {".adam_m", ".adam_v", ".momentum"})
    if (name.ends_with(suffix)) {
      if (param) *param = name.substr(0, name.size() - suffix.size());
      return true;
    }
  return false;
}

// The leaves of a JSON value by path ("model.d_model" -> "128").
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out[prefix] = j.dump();
  }
}

// "d_model 128 in the file, 192 in the model; layers 2 in the file, 4 in the model": the values
// of the models' configs that differ (their "model" objects when both have one).
std::string config_differences(const std::string& file_config, const std::string& model_config) {
  const nlohmann::json a = nlohmann::json::parse(file_config, nullptr, false),
                       b = nlohmann::json::parse(model_config, nullptr, false);
  if (!a.is_object() || !b.is_object()) return "";
  const bool models = a.contains("model") && b.contains("model");
  std::map<std::string, std::string> fa, fb;
  flatten(models ? a["model"] : a, "", fa);
  flatten(models ? b["model"] : b, "", fb);
  std::string s;
  int shown = 0;
  for (const auto& [k, v] : fa) {
    const auto it = fb.find(k);
    if (it == fb.end() || it->second == v) continue;
    if (shown++ < 5)
      s += (s.empty() ? "" : "; ") + k + " " + v + " in the file, " + it->second + " in the model";
  }
  if (shown > 5) s += " and " + std::to_string(shown - 5) + " more";
  return s;
}

// Every way `file` fails to fit `model`, as one error; nothing when it fits. The error stays
// readable for a model of another size: it leads with the likely cause, lists at most ten
// tensors of each kind and leaves out the optimizer state of parameters already listed.
void check_match(const std::string& path, const NamedArrays& file, const NamedArrays& model,
                 const CheckpointLoadOptions& opts, const std::string& file_config) {
  std::vector<std::string> shapes, dtypes, missing, unexpected;
  std::set<std::string> mismatched;
  std::size_t state_mismatches = 0;
  std::map<std::pair<std::int64_t, std::int64_t>, int> dim_pairs;  // (file, model) -> count
  auto selected = [&](const std::string& name) { return !opts.select || opts.select(name); };
  for (const auto& [name, want] : model) {
    if (!selected(name)) continue;
    const auto it = file.find(name);
    if (it == file.end()) {
      missing.push_back(name);
      continue;
    }
    const Array& got = it->second;
    if (got.dims() != want.dims()) {
      mismatched.insert(name);
      std::string param;
      if (is_optimizer_state(name, &param) && model.count(param)) {
        ++state_mismatches;  // listed with its parameter
        continue;
      }
      shapes.push_back("tensor '" + name + "' has shape " + got.shape_string() +
                       ", the model expects " + want.shape_string());
      if (got.rank() == want.rank()) {
        std::set<std::pair<std::int64_t, std::int64_t>> pairs;  // each change once per tensor
        for (int d = 0; d < got.rank(); ++d)
          if (got.dim(d) != want.dim(d)) pairs.insert({got.dim(d), want.dim(d)});
        for (const auto& pr : pairs) ++dim_pairs[pr];
      }
    } else if (got.dtype() != want.dtype() && !(is_float(got.dtype()) && is_float(want.dtype()))) {
      dtypes.push_back("tensor '" + name + "' has dtype " + std::string(dtype_name(got.dtype())) +
                       ", the model expects " + std::string(dtype_name(want.dtype())));
    }
  }
  for (const auto& [name, a] : file)
    if (selected(name) && !model.count(name)) unexpected.push_back(name);
  std::vector<std::string> problems;
  // The likely cause first: the configs' differences, else the most frequent dim change.
  if (!shapes.empty()) {
    std::string cause;
    if (!opts.expected_config.empty())
      cause = config_differences(file_config, opts.expected_config);
    if (!cause.empty()) {
      cause = "the checkpoint was written by a model of another config: " + cause;
    } else if (!dim_pairs.empty()) {
      const auto most =
          std::max_element(dim_pairs.begin(), dim_pairs.end(),
                           [](const auto& x, const auto& y) { return x.second < y.second; });
      cause = "a model of another size wrote it: a dim that is " +
              std::to_string(most->first.first) + " in the file is " +
              std::to_string(most->first.second) + " in the model (in " +
              std::to_string(most->second) + " tensor" + (most->second == 1 ? "" : "s") + ")";
    }
    if (!cause.empty()) problems.push_back("likely cause: " + cause);
    if (shapes.size() == 1 && state_mismatches == 0) {
      problems.push_back(shapes.front());
    } else {
      std::string text = count_of(shapes.size(), "tensor") + " of another shape";
      if (state_mismatches > 0)
        text += " (and " + std::to_string(state_mismatches) +
                " optimizer state tensors of these, not listed)";
      problems.push_back(text + ": " + item_list(shapes));
    }
  }
  if (dtypes.size() == 1)
    problems.push_back(dtypes.front());
  else if (!dtypes.empty())
    problems.push_back(count_of(dtypes.size(), "tensor") +
                       " of another dtype: " + item_list(dtypes));
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

// Refuses NaN and infinite values unless allowed (see CheckpointLoadOptions::allow_nonfinite).
void check_values(const std::string& path, const NamedArrays& file,
                  const CheckpointLoadOptions& opts) {
  if (opts.allow_nonfinite) return;
  const FiniteReport r = check_finite(file, opts.select);
  if (r.nonfinite > 0)
    fail(path, r.describe() +
                   ": the run that wrote it diverged. Load an earlier checkpoint, or pass "
                   "allow_nonfinite (--allow-nonfinite) to load it anyway");
}

}  // namespace

std::string FiniteReport::describe() const {
  if (nonfinite == 0) return "";
  char value[32];
  std::snprintf(value, sizeof value, "%g", first_value);
  return std::to_string(nonfinite) + " non-finite value" + (nonfinite == 1 ? "" : "s") +
         ", the first in tensor '" + first_name + "' (" + value + " at element " +
         std::to_string(first_index) + ")";
}

FiniteReport check_finite(const NamedArrays& store,
                          const std::function<bool(const std::string&)>& select) {
  FiniteReport r;
  for (const auto& entry : store) {
    // Not a structured binding: clang 14 cannot capture one in the lambda below.
    const std::string& name = entry.first;
    const Array& a = entry.second;
    if (!is_float(a.dtype()) || (select && !select(name))) continue;
    auto note = [&](double v, std::int64_t i) {
      if (!std::isfinite(v)) {
        if (r.nonfinite++ == 0) {
          r.first_name = name;
          r.first_index = i;
          r.first_value = v;
        }
      } else if (std::abs(v) > r.max_abs) {
        r.max_abs = std::abs(v);
        r.max_abs_name = name;
      }
    };
    const std::int64_t n = a.numel();
    if (a.dtype() == DType::f32) {
      const float* x = a.data<float>();
      for (std::int64_t i = 0; i < n; ++i) note(x[i], i);
    } else if (a.dtype() == DType::f64) {
      const double* x = a.data<double>();
      for (std::int64_t i = 0; i < n; ++i) note(x[i], i);
    } else if (a.dtype() == DType::bf16) {  // the upper half of an f32, widened exactly
      const auto* x = static_cast<const std::uint16_t*>(a.raw());
      for (std::int64_t i = 0; i < n; ++i) {
        const std::uint32_t bits = std::uint32_t{x[i]} << 16;
        float v;
        std::memcpy(&v, &bits, sizeof v);
        note(v, i);
      }
    } else {
      for (std::int64_t i = 0; i < n; ++i) note(a.at(i), i);
    }
  }
  return r;
}

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
  check_match(path, file.tensors, store, opts, info.config_json);
  check_values(path, file.tensors, opts);
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
  check_match(path, file.tensors, session.params(), opts, info.config_json);
  check_values(path, file.tensors, opts);
  for (const auto& [name, value] : file.tensors)
    if ((!opts.select || opts.select(name)) && session.params().count(name))
      session.set_param(name, value);
  return info;
}

}  // namespace stag

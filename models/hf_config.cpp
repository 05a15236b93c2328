// Hugging Face model folders (models/hf.hpp): config.json read and checked against stag's
// compiled presets (LmConfig), with errors that name the field, both values and the preset to use.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/hf_detail.hpp>

namespace stag::hf {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

using detail::fail;

// config.json's fields, read with their types checked.
struct ConfigReader {
  const json& j;
  fs::path file;

  bool has(const char* key) const { return j.contains(key) && !j[key].is_null(); }
  std::int64_t integer(const char* key, std::optional<std::int64_t> fallback = {}) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      fail(file, std::string("has no \"") + key + "\"");
    }
    if (!j[key].is_number_integer())
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ", expected an integer");
    return j[key].get<std::int64_t>();
  }
  double number(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_number())
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ", expected a number");
    return j[key].get<double>();
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_boolean())
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ", expected true or false");
    return j[key].get<bool>();
  }
  std::string string(const char* key, std::string fallback) const {
    if (!has(key)) return fallback;
    if (!j[key].is_string())
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ", expected a string");
    return j[key].get<std::string>();
  }
  // A token id, or the first of a list of them (Llama 3 lists several eos ids).
  std::optional<std::int32_t> token_id(const char* key) const {
    if (!has(key)) return std::nullopt;
    const json& v = j[key].is_array() && !j[key].empty() ? j[key][0] : j[key];
    if (!v.is_number_integer())
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ", expected a token id");
    return v.get<std::int32_t>();
  }
  void refuse(bool bad, const char* key, const std::string& why) const {
    if (bad)
      fail(file, std::string("\"") + key + "\" is " + j[key].dump() + ": " + why +
                     " (stag's graph for this model type does not have it)");
  }
};

int narrow(std::int64_t v, const char* key, const fs::path& file) {
  if (v <= 0 || v > (1 << 30)) fail(file, std::string("\"") + key + "\" is out of range");
  return static_cast<int>(v);
}

// The config fields inference uses, with their config.json names in a Llama-family and in a
// GPT-2 config (for messages; nullptr: the field is not in that family's config).
struct Field {
  const char* llama;
  const char* gpt2;
  std::string (*show)(const LmConfig&);
};
std::string num(double v) {
  return json(v).dump();
}
std::string model_type(const LmConfig& c) {
  return c.arch == LmArch::gpt2 ? "gpt2" : c.qkv_bias ? "qwen2" : "llama";
}
constexpr Field kFields[] = {
    {"vocab_size", "vocab_size", [](const LmConfig& c) { return std::to_string(c.vocab); }},
    {"hidden_size", "n_embd", [](const LmConfig& c) { return std::to_string(c.d_model); }},
    {"num_attention_heads", "n_head", [](const LmConfig& c) { return std::to_string(c.heads); }},
    {"num_key_value_heads", nullptr, [](const LmConfig& c) { return std::to_string(c.kv_heads); }},
    {"intermediate_size", "n_inner", [](const LmConfig& c) { return std::to_string(c.d_ff); }},
    {"num_hidden_layers", "n_layer", [](const LmConfig& c) { return std::to_string(c.layers); }},
    {nullptr, "n_positions", [](const LmConfig& c) { return std::to_string(c.max_positions); }},
    {"rope_theta", nullptr, [](const LmConfig& c) { return num(c.rope_theta); }},
    {"rms_norm_eps", "layer_norm_epsilon", [](const LmConfig& c) { return num(c.norm_eps); }},
    {"tie_word_embeddings", "tie_word_embeddings",
     [](const LmConfig& c) { return std::string(c.tie_embeddings ? "true" : "false"); }},
    {"model_type", "model_type", [](const LmConfig& c) { return json(model_type(c)).dump(); }},
};

std::vector<std::string> differences(const LmConfig& file, const LmConfig& preset,
                                     std::string_view preset_name) {
  std::vector<std::string> out;
  for (const Field& f : kFields) {
    const char* name = file.arch == LmArch::gpt2 ? f.gpt2 : f.llama;
    if (name == nullptr) continue;
    const std::string a = f.show(file), b = f.show(preset);
    if (a != b)
      out.push_back(std::string(name) + " is " + a + " in config.json, " + b + " in preset " +
                    std::string(preset_name));
  }
  return out;
}

}  // namespace

namespace {
// GPT2LMHeadModel's config.json (GPT2Config's names and defaults).
HfConfig read_gpt2_config(const ConfigReader& r, HfConfig c) {
  const fs::path& file = r.file;
  LmConfig& m = c.lm;
  m.arch = LmArch::gpt2;
  m.vocab = narrow(r.integer("vocab_size", 50257), "vocab_size", file);
  m.d_model = narrow(r.integer("n_embd", 768), "n_embd", file);
  m.heads = narrow(r.integer("n_head", 12), "n_head", file);
  m.kv_heads = m.heads;
  m.d_ff = r.has("n_inner") ? narrow(r.integer("n_inner"), "n_inner", file) : 4 * m.d_model;
  m.layers = narrow(r.integer("n_layer", 12), "n_layer", file);
  m.max_positions = narrow(r.integer("n_positions", 1024), "n_positions", file);
  m.norm_eps = r.number("layer_norm_epsilon", 1e-5);
  m.tie_embeddings = r.boolean("tie_word_embeddings", true);
  m.rope_theta = 0.0;
  m.qkv_bias = false;
  m.dropout = 0.0;
  m.label_smoothing = 0.0;
  const std::string act = r.string("activation_function", "gelu_new");
  r.refuse(act != "gelu_new" && act != "gelu_pytorch_tanh", "activation_function",
           "an activation other than GELU's tanh approximation (gelu_new)");
  r.refuse(!r.boolean("scale_attn_weights", true), "scale_attn_weights",
           "attention scores not scaled by 1/sqrt(head_dim)");
  r.refuse(r.boolean("scale_attn_by_inverse_layer_idx", false), "scale_attn_by_inverse_layer_idx",
           "scores scaled by 1/(layer + 1)");
  r.refuse(r.boolean("add_cross_attention", false), "add_cross_attention",
           "cross-attention to an encoder");
  if (m.d_model % m.heads != 0)
    fail(file, "\"n_embd\" " + std::to_string(m.d_model) + " is not a multiple of \"n_head\" " +
                   std::to_string(m.heads));
  c.bos_id = r.token_id("bos_token_id");
  c.eos_id = r.token_id("eos_token_id");
  c.max_positions = m.max_positions;
  c.torch_dtype = r.string("torch_dtype", "");
  return c;
}
}  // namespace

HfConfig read_config(const fs::path& path) {
  const fs::path file = fs::is_directory(path) ? path / "config.json" : path;
  const std::string text = data::read_file(file, "Hugging Face config", "");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(file, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object()) fail(file, "is not a JSON object");
  const ConfigReader r{j, file};
  HfConfig c;
  c.model_type = r.string("model_type", "");
  if (c.model_type == "gpt2") return read_gpt2_config(r, std::move(c));
  if (c.model_type != "llama" && c.model_type != "qwen2")
    fail(file, "\"model_type\" is " + (r.has("model_type") ? j["model_type"].dump() : "missing") +
                   "; stag loads \"llama\" (Llama, SmolLM, TinyLlama), \"qwen2\" (Qwen2, "
                   "Qwen2.5) and \"gpt2\" (GPT-2) models");
  const bool qwen = c.model_type == "qwen2";
  LmConfig& m = c.lm;
  m.vocab = narrow(r.integer("vocab_size"), "vocab_size", file);
  m.d_model = narrow(r.integer("hidden_size"), "hidden_size", file);
  m.heads = narrow(r.integer("num_attention_heads"), "num_attention_heads", file);
  m.kv_heads = narrow(r.integer("num_key_value_heads", m.heads), "num_key_value_heads", file);
  m.d_ff = narrow(r.integer("intermediate_size"), "intermediate_size", file);
  m.layers = narrow(r.integer("num_hidden_layers"), "num_hidden_layers", file);
  m.rope_theta = r.number("rope_theta", 10000.0);
  m.norm_eps = r.number("rms_norm_eps", 1e-6);
  m.tie_embeddings = r.boolean("tie_word_embeddings", false);
  m.qkv_bias = qwen;  // Qwen2 always has q/k/v biases
  m.dropout = 0.0;
  m.label_smoothing = 0.0;
  r.refuse(r.has("rope_scaling"), "rope_scaling", "scaled rotary positions");
  r.refuse(r.string("hidden_act", "silu") != "silu", "hidden_act",
           "an MLP activation other than silu");
  r.refuse(r.boolean("mlp_bias", false), "mlp_bias", "biases in the MLP");
  if (!qwen)
    r.refuse(r.boolean("attention_bias", false), "attention_bias",
             "biases in the Llama attention projections (q, k, v and o)");
  if (qwen)
    r.refuse(r.boolean("use_sliding_window", false), "use_sliding_window",
             "sliding-window attention");
  if (r.has("head_dim"))
    r.refuse(r.integer("head_dim") * m.heads != m.d_model, "head_dim",
             "a head dim other than hidden_size / num_attention_heads = " +
                 std::to_string(m.d_model / m.heads));
  c.bos_id = r.token_id("bos_token_id");
  c.eos_id = r.token_id("eos_token_id");
  c.max_positions = r.integer("max_position_embeddings", 0);
  c.torch_dtype = r.string("torch_dtype", "");
  return c;
}

const LmPreset& preset_for(const HfConfig& c, std::span<const LmPreset> presets) {
  const LmPreset* nearest = nullptr;
  std::vector<std::string> nearest_diff;
  // The nearest: of the same model type first, then with the fewest differing fields.
  const auto distance = [&](const LmPreset& p, std::size_t fields) {
    return fields + (model_type(*p.config) != model_type(c.lm) ? 1000 : 0);
  };
  for (const LmPreset& p : presets) {
    std::vector<std::string> d = differences(c.lm, *p.config, p.name);
    if (d.empty()) return p;
    if (!nearest || distance(p, d.size()) < distance(*nearest, nearest_diff.size())) {
      nearest = &p;
      nearest_diff = std::move(d);
    }
  }
  std::string msg = "stag::hf: no compiled-in preset has this " + c.model_type + " config";
  if (nearest) {
    msg +=
        "; the nearest is " + std::string(nearest->name) + " (" + std::string(nearest->what) + "):";
    for (const std::string& d : nearest_diff) msg += "\n  " + d;
  }
  msg +=
      "\nThe graph is built at compile time: add a line for this config to "
      "models/lm_presets.hpp (or pass your own LmPreset): " +
      lm_config_text(c.lm);
  throw Error(msg);
}

}  // namespace stag::hf

// The compiled-in language-model configs and the config's JSON form. Each table line
// instantiates one decode-step graph (a few hundred nodes, about a second of compile time).
#include <algorithm>
#include <optional>

#include <boost/hana/accessors.hpp>
#include <boost/hana/first.hpp>
#include <boost/hana/for_each.hpp>
#include <boost/hana/second.hpp>
#include <boost/hana/string.hpp>
#include <nlohmann/json.hpp>

#include <stag/models/generate.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace detail {
// The Hugging Face presets' decode graphs, built in lm_presets_hf.cpp (their own translation
// unit keeps each within the compile-memory budget).
extern const GraphView kSmolLm135MDecode;
extern const GraphView kQwen25_05BDecode;
extern const GraphView kTinyLlama11BDecode;
extern const GraphView kGpt2_124MDecode;
// Their bf16_weights graphs (lm_presets_hf_bf16.cpp, lm_presets_hf_bf16_b.cpp).
extern const GraphView kSmolLm135MDecodeBf16;
extern const GraphView kQwen25_05BDecodeBf16;
extern const GraphView kTinyLlama11BDecodeBf16;
extern const GraphView kGpt2_124MDecodeBf16;
}  // namespace detail
namespace {

// A function-local table: the Hugging Face rows copy graphs from another translation unit, so
// the table is made on first use, never during static initialisation.
std::span<const LmPreset> preset_table() {
  static const LmPreset kPresets[] = {
      {"char-tiny", &kLmCharTiny, lm_decode_graph<kLmCharTiny>,
       "character LM, 4 x 128, GQA 4/2 heads"},
      {"char-small", &kLmCharSmall, lm_decode_graph<kLmCharSmall>,
       "character LM, 6 x 256, GQA 8/2 heads"},
      {"bpe-base", &kLmBpeBase, lm_decode_graph<kLmBpeBase>,
       "byte-BPE LM (4096 ids), 4 x 256, GQA 8/2 heads"},
      {"small", &kLmTrainSmall, lm_decode_graph<kLmTrainSmall>,
       "stag-train lm --model small: characters (256 ids), 4 x 192, GQA 6/2 heads"},
      {"small-bpe", &kLmTrainSmallBpe, lm_decode_graph<kLmTrainSmallBpe>,
       "stag-train lm --model small-bpe: byte-BPE (2048 ids), 4 x 192, GQA 6/2 heads"},
      {"smollm-135m", &kLmSmolLm135M, detail::kSmolLm135MDecode,
       "Hugging Face SmolLM-135M (Llama): 30 x 576, GQA 9/3 heads, 49152 ids, tied",
       detail::kSmolLm135MDecodeBf16},
      {"qwen2.5-0.5b", &kLmQwen25_05B, detail::kQwen25_05BDecode,
       "Hugging Face Qwen2.5-0.5B (Qwen2): 24 x 896, GQA 14/2 heads, q/k/v biases, 151936 ids, "
       "tied",
       detail::kQwen25_05BDecodeBf16},
      {"tinyllama-1.1b", &kLmTinyLlama11B, detail::kTinyLlama11BDecode,
       "Hugging Face TinyLlama-1.1B (Llama): 22 x 2048, GQA 32/4 heads, 32000 ids, untied",
       detail::kTinyLlama11BDecodeBf16},
      {"gpt2", &kLmGpt2_124M, detail::kGpt2_124MDecode,
       "Hugging Face gpt2 (GPT-2 small, 124M): 12 x 768, 12 heads, 1024 positions, 50257 ids, "
       "tied",
       detail::kGpt2_124MDecodeBf16},
  };
  return kPresets;
}

nlohmann::json json_value(LmArch a) {
  return std::string(lm_arch_name(a));
}
template <class M>
nlohmann::json json_value(const M& v) {
  return v;
}

bool same_model(const LmConfig& a, const LmConfig& b) {
  return a.vocab == b.vocab && a.d_model == b.d_model && a.heads == b.heads &&
         a.kv_heads == b.kv_heads && a.d_ff == b.d_ff && a.layers == b.layers &&
         a.rope_theta == b.rope_theta && a.tie_embeddings == b.tie_embeddings &&
         a.norm_eps == b.norm_eps && a.qkv_bias == b.qkv_bias && a.arch == b.arch &&
         a.max_positions == b.max_positions;
}

}  // namespace

const GraphView& LmPreset::decode_for(DType weights) const {
  if (weights == DType::f32) return decode;
  if (weights != DType::bf16)
    throw Error("stag: weights in " + std::string(dtype_name(weights)) +
                ": a model's weights are f32 or bf16");
  if (decode_bf16.size() == 0)
    throw Error("stag: preset " + std::string(name) +
                " has no decode graph for bf16 weights in this program (the Hugging Face "
                "presets have one: smollm-135m, qwen2.5-0.5b, tinyllama-1.1b, gpt2); use f32 "
                "weights");
  return decode_bf16;
}

std::span<const LmPreset> lm_presets() {
  return preset_table();
}

const LmPreset* find_lm_preset(const LmConfig& c) {
  for (const LmPreset& p : preset_table())
    if (same_model(*p.config, c)) return &p;
  return nullptr;
}

const LmPreset* find_lm_preset(std::string_view name) {
  for (const LmPreset& p : preset_table())
    if (p.name == name) return &p;
  return nullptr;
}

const LmPreset& require_lm_preset(const LmConfig& c, std::span<const LmPreset> extra) {
  for (const LmPreset& p : extra)
    if (same_model(*p.config, c)) return p;
  if (const LmPreset* p = find_lm_preset(c)) return *p;
  std::string known;
  for (const LmPreset& p : extra)
    known += "\n  " + std::string(p.name) + ": " + lm_config_text(*p.config);
  for (const LmPreset& p : preset_table())
    known += "\n  " + std::string(p.name) + ": " + lm_config_text(*p.config);
  throw Error(
      "stag: no compiled-in language model has the config " + lm_config_text(c) +
      " (graphs are built at compile time; add it to models/lm_presets.cpp). Known configs:" +
      known);
}

std::string lm_config_to_json(const LmConfig& c) {
  nlohmann::json j = nlohmann::json::object();
  boost::hana::for_each(boost::hana::accessors<LmConfig>(), [&](auto field) {
    j[boost::hana::to<const char*>(boost::hana::first(field))] =
        json_value(boost::hana::second(field)(c));
  });
  return j.dump();
}

LmConfig lm_config_from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag: model config: invalid JSON: ") + e.what());
  }
  if (j.is_object() && j.contains("model") && j["model"].is_object()) j = j["model"];
  if (!j.is_object()) throw Error("stag: model config: expected a JSON object, got " + j.dump());
  LmConfig c;
  boost::hana::for_each(boost::hana::accessors<LmConfig>(), [&](auto field) {
    const char* key = boost::hana::to<const char*>(boost::hana::first(field));
    auto& member = boost::hana::second(field)(c);
    using M = std::remove_reference_t<decltype(member)>;
    // Older checkpoints lack the later fields: they take LmConfig's defaults.
    constexpr std::string_view kOptional[] = {"dropout",        "label_smoothing", "rope_theta",
                                              "tie_embeddings", "norm_eps",        "qkv_bias",
                                              "arch",           "max_positions"};
    const bool required = std::find(std::begin(kOptional), std::end(kOptional),
                                    std::string_view(key)) == std::end(kOptional);
    if (!j.contains(key)) {
      if (required)
        throw Error("stag: model config: missing \"" + std::string(key) + "\" in " + j.dump());
      return;
    }
    const nlohmann::json& v = j[key];
    if constexpr (std::is_same_v<M, LmArch>) {
      const std::optional<LmArch> a =
          v.is_string() ? lm_arch_from_name(v.get<std::string>()) : std::nullopt;
      if (!a)
        throw Error("stag: model config: \"" + std::string(key) + "\" is " + v.dump() +
                    ", expected \"llama\" or \"gpt2\"");
      member = *a;
    } else {
      const bool ok = std::is_same_v<M, bool> ? v.is_boolean()
                      : std::is_integral_v<M> ? v.is_number_integer()
                                              : v.is_number();
      if (!ok)
        throw Error("stag: model config: \"" + std::string(key) + "\" is " + v.dump() +
                    ", expected " +
                    (std::is_same_v<M, bool> ? "true or false"
                     : std::is_integral_v<M> ? "an integer"
                                             : "a number"));
      member = v.get<M>();
    }
  });
  return c;
}

std::string lm_config_text(const LmConfig& c) {
  std::string s;
  boost::hana::for_each(boost::hana::accessors<LmConfig>(), [&](auto field) {
    const nlohmann::json v = json_value(boost::hana::second(field)(c));
    s += (s.empty() ? "" : " ") +
         std::string(boost::hana::to<const char*>(boost::hana::first(field))) + "=" + v.dump();
  });
  return s;
}

}  // namespace stag

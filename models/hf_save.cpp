// Saving a model as a Hugging Face folder (models/hf.hpp, hf::save): config.json as transformers
// writes it, the weights under transformers' names and layouts, and the tokenizer.
#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/hf_detail.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/safetensors.hpp>

namespace stag::hf {

using detail::fail;
using detail::write_text_atomic;
using nlohmann::json;
namespace fs = std::filesystem;

// ---- saving -----------------------------------------------------------------------------------

namespace {
// GPT2LMHeadModel's config.json, as GPT2Config writes it.
std::string gpt2_config_json(const LmConfig& c, const SaveOptions& o) {
  nlohmann::ordered_json j;
  j["architectures"] = {"GPT2LMHeadModel"};
  j["model_type"] = "gpt2";
  j["vocab_size"] = c.vocab;
  j["n_positions"] = c.max_positions;
  j["n_ctx"] = c.max_positions;
  j["n_embd"] = c.d_model;
  j["n_layer"] = c.layers;
  j["n_head"] = c.heads;
  j["n_inner"] = c.d_ff == 4 * c.d_model ? json(nullptr) : json(c.d_ff);
  j["activation_function"] = "gelu_new";
  j["layer_norm_epsilon"] = c.norm_eps;
  j["resid_pdrop"] = c.dropout;
  j["embd_pdrop"] = c.dropout;
  j["attn_pdrop"] = c.dropout;
  j["scale_attn_weights"] = true;
  j["scale_attn_by_inverse_layer_idx"] = false;
  j["reorder_and_upcast_attn"] = false;
  j["tie_word_embeddings"] = c.tie_embeddings;
  j["bos_token_id"] = o.bos_id ? json(*o.bos_id) : json(nullptr);
  j["eos_token_id"] = o.eos_id ? json(*o.eos_id) : json(nullptr);
  j["torch_dtype"] = o.bf16 ? "bfloat16" : "float32";
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}
}  // namespace

std::string config_json(const LmConfig& c, const SaveOptions& o) {
  if (c.arch == LmArch::gpt2) return gpt2_config_json(c, o);
  const bool qwen = c.qkv_bias;
  nlohmann::ordered_json j;
  j["architectures"] = {qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = qwen ? "qwen2" : "llama";
  j["vocab_size"] = c.vocab;
  j["hidden_size"] = c.d_model;
  j["intermediate_size"] = c.d_ff;
  j["num_hidden_layers"] = c.layers;
  j["num_attention_heads"] = c.heads;
  j["num_key_value_heads"] = c.kv_heads;
  j["head_dim"] = c.d_model / c.heads;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = o.max_positions;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = nullptr;
  j["tie_word_embeddings"] = c.tie_embeddings;
  if (qwen) {
    j["use_sliding_window"] = false;
  } else {
    j["attention_bias"] = false;
    j["mlp_bias"] = false;
  }
  j["bos_token_id"] = o.bos_id ? json(*o.bos_id) : json(nullptr);
  j["eos_token_id"] = o.eos_id ? json(*o.eos_id) : json(nullptr);
  j["torch_dtype"] = o.bf16 ? "bfloat16" : "float32";
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

void save(const fs::path& folder, const LmConfig& c, const NamedArrays& weights,
          const data::HfTokenizer* tokenizer, const SaveOptions& o) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) fail(folder, "cannot create the folder: " + ec.message());
  NamedArrays out;
  for (const auto& [name, a] : weights) {
    if (name.find("_cache") != std::string::npos) continue;  // decode-step state, not weights
    if (c.tie_embeddings && name == "lm_head.weight") continue;
    out.emplace(to_hf_name(name), o.bf16 ? a.to(DType::bf16) : a.to(DType::f32));
  }
  const bool gpt2 = c.arch == LmArch::gpt2;
  const std::string_view norm = gpt2 ? "ln_f.weight" : "norm.weight";
  for (const std::string_view need : {lm_embedding_name(c.arch), norm})
    if (!weights.contains(std::string(need)))
      fail(folder,
           "the weights have no '" + std::string(need) + "': not a language_model of this config");
  save_safetensors((folder / "model.safetensors").string(), out, {{"format", "pt"}});
  // A stale index would make loaders read the old shards instead.
  fs::remove(folder / "model.safetensors.index.json", ec);
  write_text_atomic(folder / "config.json", config_json(c, o));
  if (tokenizer) {
    tokenizer->save_tokenizer_json(folder / "tokenizer.json");
    nlohmann::ordered_json t;
    t["tokenizer_class"] = "PreTrainedTokenizerFast";
    t["model_max_length"] = c.arch == LmArch::gpt2 ? c.max_positions : o.max_positions;
    if (o.bos_id) t["bos_token"] = tokenizer->token(*o.bos_id);
    if (o.eos_id) t["eos_token"] = tokenizer->token(*o.eos_id);
    write_text_atomic(folder / "tokenizer_config.json", t.dump(2) + "\n");
  }
}

}  // namespace stag::hf

// Hugging Face model folders: config.json, model.safetensors (or a sharded set with its
// model.safetensors.index.json) and the tokeniser files, for the Llama family (LlamaForCausalLM:
// SmolLM, TinyLlama, Llama 3 layouts), Qwen2 (Qwen2ForCausalLM, Qwen2.5) and GPT-2
// (GPT2LMHeadModel). The graph is compiled in (models/lm_presets.hpp): the folder's config.json
// picks the preset whose LmConfig it equals, and its weights load under stag's names (the
// mapping is a renaming: both store linear weights [out_features, in_features], GPT-2's Conv1D
// weights [in, out], and rotate q/k in the rotate_half layout).
//
//   auto m = stag::hf::load("./SmolLM-135M");            // checked config, f32 weights
//   stag::Generator gen(*m.preset, std::move(m.weights), ...);
//   auto g = stag::hf::generator("./SmolLM-135M");       // the same, with its tokeniser
//   stag::hf::save("out/hf", *m.preset->config, weights, &tokenizer);  // loads in transformers
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/runtime/bind.hpp>

namespace stag::hf {

// What a config.json says, in stag's terms, and what else it carries.
struct HfConfig {
  std::string model_type;                      // "llama", "qwen2" or "gpt2"
  LmConfig lm;                                 // dropout 0, label smoothing 0
  std::optional<std::int32_t> bos_id, eos_id;  // the first when the file lists several
  std::int64_t max_positions = 0;              // max_position_embeddings (0: not given)
  std::string torch_dtype;                     // as written ("bfloat16", ...), informative
};

// Reads and checks `config.json` (a file, or a folder holding one). A model type other than
// llama, qwen2 and gpt2, or a feature stag's graph does not have (rope_scaling, an activation
// other than silu, MLP biases, Llama's attention_bias, a head_dim other than hidden / heads,
// Qwen2's sliding window; GPT-2's activations other than gelu_new, unscaled or layer-scaled
// scores, cross-attention) is a stag::Error naming the field and its value.
HfConfig read_config(const std::filesystem::path& path);

// The preset among `presets` whose config equals `c` (every field inference uses). None: a
// stag::Error that names the nearest preset and, for each field that differs, the field's
// config.json name and both values ("hidden_size is 512 in config.json, 576 in preset
// smollm-135m"), and says how to add a preset.
const LmPreset& preset_for(const HfConfig& c, std::span<const LmPreset> presets = lm_presets());

// stag's parameter name for a Hugging Face tensor name, or nullopt for a name stag has no
// parameter for ("model.layers.3.self_attn.q_proj.weight" -> "layers.3.self_attn.q_proj.weight",
// "model.layers.0.input_layernorm.weight" -> "layers.0.input_norm.weight"; GPT-2's
// "transformer.h.0.attn.c_attn.weight" and "h.0.attn.c_attn.weight" -> the latter); and back
// (GPT-2's with "transformer.", as GPT2LMHeadModel saves them).
std::optional<std::string> to_stag_name(std::string_view hf_name);
std::string to_hf_name(std::string_view stag_name);

struct LoadOptions {
  bool allow_nonfinite = false;  // load weights with NaN or infinities anyway
  // Hugging Face names that may be present without a parameter to go to (beyond the ones
  // always ignored: a tied model's lm_head.weight, rotary_emb.inv_freq buffers, GPT-2's
  // attn.bias / attn.masked_bias mask buffers).
  std::vector<std::string> ignore = {};
  // How the weights the matmuls read are kept: f32, or bf16 for the preset's decode_bf16 graph
  // (a BF16 file's values are then copied as they are, an F32, F16 or F64 one's rounded once).
  DType weights = DType::f32;
};

// A loaded model: the preset that runs it, its weights under stag's names (f32, or bf16 where
// LoadOptions::weights asks), the config.
struct Model {
  const LmPreset* preset = nullptr;
  NamedArrays weights;
  HfConfig config;
  std::vector<std::filesystem::path> files;  // the safetensors files read
};

// Reads the weights of a model folder for `preset`: model.safetensors, or every shard named
// by model.safetensors.index.json. Each file is memory-mapped and every tensor converted
// straight into its parameter (F32, F16, BF16, F64; no copy of the file in memory). Every
// problem is reported in one stag::Error: a parameter no file has, a tensor with no parameter,
// a shape that differs (both shapes), a tensor in two shards or in a shard other than the
// index says, a non-finite value.
NamedArrays load_weights(const std::filesystem::path& folder, const LmPreset& preset,
                         const LoadOptions& o = {});

// read_config + preset_for + load_weights.
Model load(const std::filesystem::path& folder, std::span<const LmPreset> presets = lm_presets(),
           const LoadOptions& o = {});

// Whether the folder's tokenizer.json puts a special token before every text (a
// TemplateProcessing post-processor whose single-sequence template starts with one, as Llama
// 3's "<|begin_of_text|>"): that token's id, else nullopt (GPT-2, SmolLM, Qwen2).
std::optional<std::int32_t> template_bos(const std::filesystem::path& folder,
                                         const data::HfTokenizer& tokenizer);

// What a model folder says about text: its tokeniser (tokenizer.json, or vocab.json +
// merges.txt; none when it has neither), config.json's <bos> and <eos> ids (-1 where absent;
// the template's first token is <bos> when tokenizer.json puts one before every text, and
// add_bos says so). A tokeniser larger than `vocab` or an id outside it is a stag::Error.
struct FolderText {
  std::optional<data::HfTokenizer> tokenizer;
  std::int32_t bos_id = -1, eos_id = -1;
  bool add_bos = false;
};
FolderText folder_text(const std::filesystem::path& folder, std::int32_t vocab);

// The "tokenizer" member a fine-tuning run writes in its checkpoints' config (stag-train lm
// --init-hf), as JSON text: {"kind": "hf", "folder": absolute path, "bos_id", "eos_id": id
// or null, "add_bos": bool}. Generator(checkpoint) reads it: the tokeniser from the folder (or
// GeneratorOptions::tokenizer_path), the ids from the object.
std::string checkpoint_tokenizer_json(const std::filesystem::path& folder, const FolderText& t);

// A Generator for a model folder: load(folder), the folder's tokeniser when it has one
// (tokenizer.json, or vocab.json + merges.txt; without one, generate from ids), config.json's
// bos_token_id and eos_token_id (-1 where absent), and <bos> before prompts when the
// tokeniser's template puts it there: `go`'s bos_id, eos_id and add_bos are set from the
// folder, first_token_id to 0 (beam search may produce any id), its other fields kept. The presets
// must outlive the Generator.
std::unique_ptr<Generator> generator(const std::filesystem::path& folder, GeneratorOptions go = {},
                                     std::span<const LmPreset> presets = lm_presets(),
                                     const LoadOptions& o = {});

struct SaveOptions {
  bool bf16 = false;  // store BF16 (rounded to nearest even) instead of F32
  std::optional<std::int32_t> bos_id = std::nullopt, eos_id = std::nullopt;
  std::int64_t max_positions = 2048;  // written as max_position_embeddings
};

// Writes a model folder that transformers (LlamaForCausalLM / Qwen2ForCausalLM /
// GPT2LMHeadModel) loads:
// config.json, model.safetensors under the Hugging Face names (a tied model has no
// lm_head.weight, as save_pretrained writes it) and, when given, tokenizer.json. The folder is
// created; files in it are replaced atomically.
void save(const std::filesystem::path& folder, const LmConfig& c, const NamedArrays& weights,
          const data::HfTokenizer* tokenizer = nullptr, const SaveOptions& o = {});

// The config.json text for `c` (what save writes).
std::string config_json(const LmConfig& c, const SaveOptions& o = {});

}  // namespace stag::hf

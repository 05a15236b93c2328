// The language-model configs this build can run, with their decode-step graphs, and the model
// config as JSON (what checkpoints keep in their "stag.config" metadata). Graphs are built at
// compile time, so a checkpoint's config must be one of these: to run another, add a line to
// the table in lm_presets.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <stag/graph/graph_view.hpp>
#include <stag/models/lm.hpp>

namespace stag {

// Character-level models (vocabularies of at most 128 code points: fortunes and the like).
inline constexpr LmConfig kLmCharTiny{.vocab = 128,
                                      .d_model = 128,
                                      .heads = 4,
                                      .kv_heads = 2,
                                      .d_ff = 384,
                                      .layers = 4,
                                      .dropout = 0.0,
                                      .rope_theta = 10000.0};
inline constexpr LmConfig kLmCharSmall{.vocab = 128,
                                       .d_model = 256,
                                       .heads = 8,
                                       .kv_heads = 2,
                                       .d_ff = 768,
                                       .layers = 6,
                                       .dropout = 0.0,
                                       .rope_theta = 10000.0};
// Byte-level BPE with 4096 ids: LmConfig's defaults (minimind-like, 4 layers of 256).
inline constexpr LmConfig kLmBpeBase{};
// The language models of `stag-train lm` (its presets "small", char-level with at most 256 ids,
// and "small-bpe"): the same values, so that its checkpoints run here.
inline constexpr LmConfig kLmTrainSmall{.vocab = 256,
                                        .d_model = 192,
                                        .heads = 6,
                                        .kv_heads = 2,
                                        .d_ff = 512,
                                        .layers = 4,
                                        .dropout = 0.0,
                                        .rope_theta = 1e4};
inline constexpr LmConfig kLmTrainSmallBpe{.vocab = 2048,
                                           .d_model = 192,
                                           .heads = 6,
                                           .kv_heads = 2,
                                           .d_ff = 512,
                                           .layers = 4,
                                           .dropout = 0.0,
                                           .rope_theta = 1e4};

// Hugging Face Llama-family checkpoints (models/hf.hpp loads them; docs/pretrained.md lists
// which models these are). Their config.json values, field for field; max_position_embeddings
// is not part of the graph (positions are rotary).
inline constexpr LmConfig kLmSmolLm135M{.vocab = 49152,  // HuggingFaceTB/SmolLM-135M
                                        .d_model = 576,
                                        .heads = 9,
                                        .kv_heads = 3,
                                        .d_ff = 1536,
                                        .layers = 30,
                                        .rope_theta = 10000.0,
                                        .tie_embeddings = true,
                                        .norm_eps = 1e-5};
inline constexpr LmConfig kLmQwen25_05B{.vocab = 151936,  // Qwen/Qwen2.5-0.5B(-Instruct)
                                        .d_model = 896,
                                        .heads = 14,
                                        .kv_heads = 2,
                                        .d_ff = 4864,
                                        .layers = 24,
                                        .rope_theta = 1000000.0,
                                        .tie_embeddings = true,
                                        .norm_eps = 1e-6,
                                        .qkv_bias = true};
inline constexpr LmConfig kLmTinyLlama11B{.vocab = 32000,  // TinyLlama/TinyLlama-1.1B-*
                                          .d_model = 2048,
                                          .heads = 32,
                                          .kv_heads = 4,
                                          .d_ff = 5632,
                                          .layers = 22,
                                          .rope_theta = 10000.0,
                                          .tie_embeddings = false,
                                          .norm_eps = 1e-5};

// GPT-2 (GPT2LMHeadModel): openai-community/gpt2, the 124 M "small"; its config.json values.
inline constexpr LmConfig kLmGpt2_124M{.vocab = 50257,
                                       .d_model = 768,
                                       .heads = 12,
                                       .kv_heads = 12,
                                       .d_ff = 3072,
                                       .layers = 12,
                                       .rope_theta = 0.0,
                                       .tie_embeddings = true,
                                       .norm_eps = 1e-5,
                                       .arch = LmArch::gpt2,
                                       .max_positions = 1024};

struct LmPreset {
  std::string_view name;
  const LmConfig* config = nullptr;
  GraphView decode;  // lm_decode_graph<config>: the decode step with a key/value cache
  std::string_view what;
  // bf16_weights<lm_decode_graph<config>>: the same step with its matmuls' weights stored in
  // bf16 (GeneratorOptions::weights); empty (size() 0) where the program does not compile it.
  GraphView decode_bf16 = {};
  // The decode graph for weights stored in `weights` (f32 or bf16); a stag::Error naming the
  // preset when it has no such graph.
  const GraphView& decode_for(DType weights) const;
};

// Every compiled-in config.
std::span<const LmPreset> lm_presets();
// The preset with exactly this config (every field but dropout, which inference ignores), or
// with this name; nullptr when there is none.
const LmPreset* find_lm_preset(const LmConfig& c);
const LmPreset* find_lm_preset(std::string_view name);
// The same, searching `extra` (a program's own sizes) before the compiled-in ones; a
// stag::Error naming the config and listing the presets when there is none.
const LmPreset& require_lm_preset(const LmConfig& c, std::span<const LmPreset> extra = {});

// The config's fields as a JSON object, by reflection (BOOST_HANA_ADAPT_STRUCT in lm.hpp):
// {"vocab":4096,"d_model":256,...,"arch":"llama",...}.
std::string lm_config_to_json(const LmConfig& c);
// The config from such an object, or from its "model" member. vocab, d_model, heads, kv_heads,
// d_ff and layers are required; the others default to LmConfig's values ("arch": "llama" or
// "gpt2"); other keys (the
// trainer's settings, "tokenizer") are ignored. A missing or mistyped field is a stag::Error.
LmConfig lm_config_from_json(std::string_view json);
// "vocab=4096 d_model=256 heads=8 kv_heads=2 d_ff=1024 layers=4 rope_theta=1e+06 ..."
std::string lm_config_text(const LmConfig& c);

}  // namespace stag

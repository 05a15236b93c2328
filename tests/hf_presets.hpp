// The presets of the tiny Hugging Face folders under tests/hf/ (tools/make_hf_fixtures.py
// writes them): their config.json values as LmConfigs, and decode-step graphs for hf::load.
// A user's own sizes are added the same way (models/lm_presets.hpp).
#pragma once

#include <filesystem>
#include <string>

#include <stag/autodiff/autocast.hpp>
#include <stag/models/generate.hpp>
#include <stag/models/lm_presets.hpp>

#include "source_dir.hpp"

namespace th {

// LlamaForCausalLM: tied, BF16, one file, a byte-level tokenizer.json.
inline constexpr stag::LmConfig kTinyLlama{.vocab = 300,
                                           .d_model = 32,
                                           .heads = 4,
                                           .kv_heads = 2,
                                           .d_ff = 48,
                                           .layers = 2,
                                           .dropout = 0.0,
                                           .rope_theta = 500.0,
                                           .tie_embeddings = true,
                                           .norm_eps = 1e-6};
// Qwen2ForCausalLM: q/k/v biases, untied, F16, two shards and an index.
inline constexpr stag::LmConfig kTinyQwen2{.vocab = 67,
                                           .d_model = 48,
                                           .heads = 6,
                                           .kv_heads = 2,
                                           .d_ff = 40,
                                           .layers = 3,
                                           .dropout = 0.0,
                                           .rope_theta = 1e6,
                                           .tie_embeddings = false,
                                           .norm_eps = 1e-6,
                                           .qkv_bias = true};
// GPT2LMHeadModel: tied, F32, GPT2Model's names with the attn.bias buffers, n_inner 40,
// vocab.json + merges.txt.
inline constexpr stag::LmConfig kTinyGpt2{.vocab = 300,
                                          .d_model = 32,
                                          .heads = 4,
                                          .kv_heads = 4,
                                          .d_ff = 40,
                                          .layers = 2,
                                          .dropout = 0.0,
                                          .rope_theta = 0.0,
                                          .tie_embeddings = true,
                                          .norm_eps = 1e-5,
                                          .arch = stag::LmArch::gpt2,
                                          .max_positions = 24};
// Their decode steps with the weights in bf16 (GeneratorOptions::weights).
inline constexpr auto kTinyLlamaBf16 = stag::bf16_weights<stag::lm_decode_graph<kTinyLlama>>();
inline constexpr auto kTinyQwen2Bf16 = stag::bf16_weights<stag::lm_decode_graph<kTinyQwen2>>();
inline constexpr auto kTinyGpt2Bf16 = stag::bf16_weights<stag::lm_decode_graph<kTinyGpt2>>();
inline const stag::LmPreset kTinyPresets[] = {
    {"tiny-llama", &kTinyLlama, stag::lm_decode_graph<kTinyLlama>, "tests/hf/llama",
     kTinyLlamaBf16},
    {"tiny-qwen2", &kTinyQwen2, stag::lm_decode_graph<kTinyQwen2>, "tests/hf/qwen2",
     kTinyQwen2Bf16},
    {"tiny-gpt2", &kTinyGpt2, stag::lm_decode_graph<kTinyGpt2>, "tests/hf/gpt2", kTinyGpt2Bf16},
};

inline std::filesystem::path hf_fixture(const std::string& name) {
  return std::filesystem::path(th::source_dir()) / "tests" / "hf" / name;
}

}  // namespace th

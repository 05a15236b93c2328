// The example behind docs/pretrained.md: a Hugging Face model folder loaded into a compiled-in
// preset, run greedily through the KV cache, and written back as a Hugging Face folder.
// Usage: example_pretrained <model folder> <output folder>; ctest passes tests/hf/llama (a tiny
// random LlamaForCausalLM in the exact Hugging Face layout) and a scratch folder.
#include <cstdio>

#include <stag/models/generate.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>

// snippet-begin: preset
// A size that lm_presets.hpp does not have: its config.json values, and its decode-step graph
// built at compile time. stag::hf::load(folder) alone looks among the built-in presets
// (SmolLM-135M, Qwen2.5-0.5B, TinyLlama-1.1B).
constexpr stag::LmConfig kTinyLlama{.vocab = 300,
                                    .d_model = 32,
                                    .heads = 4,
                                    .kv_heads = 2,
                                    .d_ff = 48,
                                    .layers = 2,
                                    .dropout = 0.0,
                                    .rope_theta = 500.0,
                                    .tie_embeddings = true,
                                    .norm_eps = 1e-6};
const stag::LmPreset kMyPresets[] = {
    {"tiny-llama", &kTinyLlama, stag::lm_decode_graph<kTinyLlama>, "tests/hf/llama"}};
// snippet-end: preset

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: example_pretrained <model folder> <output folder>\n");
    return 2;
  }
  const std::string folder = argv[1], out = argv[2];
  // snippet-begin: load
  // config.json checked against the presets; every tensor mapped, shape-checked and converted
  // from BF16 / F16 / F32 as it is read from the memory-mapped file.
  stag::hf::Model m = stag::hf::load(folder, kMyPresets);
  stag::Generator gen(*m.preset, m.weights, std::nullopt);
  const stag::GenerateResult r = gen.generate_ids({1, 5, 7}, {.max_new_tokens = 8,
                                                              .sample = {.temperature = 0.0},
                                                              .add_bos = false,
                                                              .stop_at_eos = false});
  // Back to a folder that LlamaForCausalLM.from_pretrained reads (BF16, tied head omitted).
  stag::hf::save(out, *m.preset->config, m.weights, /*tokenizer=*/nullptr,
                 {.bf16 = true, .bos_id = m.config.bos_id, .eos_id = m.config.eos_id});
  // snippet-end: load
  std::printf("preset %s, %zu weights; greedy:", std::string(m.preset->name).c_str(),
              m.weights.size());
  for (std::int32_t id : r.new_ids) std::printf(" %d", id);
  std::printf("\n");
  // The saved folder loads back to the same values (they were BF16 to begin with).
  const stag::hf::Model back = stag::hf::load(out, kMyPresets);
  for (const auto& [name, a] : m.weights)
    if (back.weights.at(name).to_doubles() != a.to_doubles()) {
      std::fprintf(stderr, "example_pretrained: %s changed in the round trip\n", name.c_str());
      return 1;
    }
  std::printf("wrote %s and loaded it back unchanged\n", out.c_str());
  return 0;
}

// The example behind docs/pretrained.md: a Hugging Face model folder loaded into a compiled-in
// preset, run greedily through the KV cache, fine-tuned for a few steps, and written back as a
// Hugging Face folder; then the same folder with its tokeniser through hf::generator.
// Usage: example_pretrained <model folder> <output folder>; ctest passes tests/hf/llama (a tiny
// random LlamaForCausalLM in the exact Hugging Face layout) and a scratch folder.
#include <cstdio>

#include <stag/models/generate.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/runtime/train/trainer.hpp>

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

// snippet-begin: train-graph
// The training graph of the same config (the loss of language_model<C>) and its optimizer.
constexpr auto kTinyLlamaNet =
    stag::model([](stag::Builder& g) { return stag::language_model<kTinyLlama>(g); });
constexpr stag::AdamW kFinetune{.beta1 = 0.9, .beta2 = 0.95, .weight_decay = 0.1};
// snippet-end: train-graph

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
  // snippet-end: load
  std::printf("preset %s, %zu weights; greedy:", std::string(m.preset->name).c_str(),
              m.weights.size());
  for (std::int32_t id : r.new_ids) std::printf(" %d", id);
  std::printf("\n");

  // snippet-begin: finetune
  stag::Trainer trainer(stag::training_graphs<kTinyLlamaNet, kFinetune>(),
                        {.session = {.threads = 1}, .lr = stag::LrSchedule::constant(1e-2)});
  trainer.init_from(m.weights);  // every parameter, shape-checked
  stag::Array ids(stag::DType::i32, {1, 6}), targets(stag::DType::i32, {1, 6});
  for (int t = 0; t < 6; ++t) {  // learn to continue 10 11 12 ... with the next number
    ids.set(t, 10 + t);
    targets.set(t, 11 + t);
  }
  double first = 0, last = 0;
  for (int step = 0; step < 10; ++step) {
    last = trainer.step({{"ids", ids}, {"targets", targets}}).loss;
    if (step == 0) first = last;
  }
  stag::NamedArrays tuned;  // the parameters, without the optimizer's moments
  for (const auto& [name, value] : trainer.params())
    if (m.weights.count(name)) tuned.emplace(name, value);
  // Back to a folder that LlamaForCausalLM.from_pretrained reads (BF16, tied head omitted).
  stag::hf::save(out, *m.preset->config, tuned, /*tokenizer=*/nullptr,
                 {.bf16 = true, .bos_id = m.config.bos_id, .eos_id = m.config.eos_id});
  // snippet-end: finetune
  std::printf("fine-tuning loss %.3f -> %.3f\n", first, last);
  if (!(last < first)) {
    std::fprintf(stderr, "example_pretrained: the loss did not fall\n");
    return 1;
  }
  // The saved folder loads back to the fine-tuned values, rounded to BF16.
  const stag::hf::Model back = stag::hf::load(out, kMyPresets);
  for (const auto& [name, a] : tuned)
    if (back.weights.at(name).to_doubles() != a.to(stag::DType::bf16).to_doubles()) {
      std::fprintf(stderr, "example_pretrained: %s changed in the round trip\n", name.c_str());
      return 1;
    }
  std::printf("wrote %s and loaded it back\n", out.c_str());

  // snippet-begin: generator
  // The folder with its tokenizer.json and config.json's <bos> / <eos>: text in, text out.
  std::unique_ptr<stag::Generator> g = stag::hf::generator(folder, {.threads = 1}, kMyPresets);
  const stag::GenerateResult text =
      g->generate("Once upon a time", {.max_new_tokens = 8, .sample = {.temperature = 0.0}});
  // snippet-end: generator
  std::printf("\"Once upon a time\" is %zu ids; continued with \"%s\" (%zu ids)\n",
              text.prompt_ids.size(), text.text.c_str(), text.new_ids.size());
  return 0;
}

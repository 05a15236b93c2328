// Fine-tuning a Hugging Face model: the tiny Llama, Qwen2 and GPT-2 folders of tests/hf/ loaded
// with hf::load into a Trainer (Trainer::init_from), 20 AdamW steps on one batch, against the same
// 20 steps of torch.optim.AdamW in float64 from the same weights (tools/make_hf_fixtures.py):
// the loss before every step, then the fine-tuned weights saved with hf::save, loaded back, and
// their logits against the reference's after its 20 steps.
#include <algorithm>
#include <cmath>

#include "harness.hpp"
#include "hf_presets.hpp"
#include "test_files.hpp"

#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/lm.hpp>
#include <stag/runtime/train/safetensors.hpp>
#include <stag/runtime/train/trainer.hpp>

namespace {

using namespace stag;
namespace fs = std::filesystem;

constexpr auto kLlamaNet = model([](Builder& g) { return language_model<th::kTinyLlama>(g); });
constexpr auto kQwen2Net = model([](Builder& g) { return language_model<th::kTinyQwen2>(g); });
constexpr auto kGpt2Net = model([](Builder& g) { return language_model<th::kTinyGpt2>(g); });
// The reference's optimizer: torch.optim.AdamW(lr=1e-2, betas=(0.9, 0.95), eps=1e-8), decay 0.1
// on matrices and embeddings, none on biases and norm gains (stag's rule for parameters).
constexpr AdamW kAdamW{.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1};

// The largest of |a - b| / max(1, |b|).
double scaled_error(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
  return worst;
}

void check_finetune(const std::string& name, const TrainingGraphs& graphs) {
  const fs::path folder = th::hf_fixture(name);
  const SafetensorsFile ref = load_safetensors((folder / "reference.safetensors").string());
  const hf::Model m = hf::load(folder, th::kTinyPresets);

  // NOTE: the options are set one by one: g++ 12 warns (falsely) about a TrainerOptions built
  // with designated initializers and destroyed inline (docs/examples/CMakeLists.txt).
  TrainerOptions options;
  options.session.threads = 1;
  options.session.seed = 1;
  options.lr = LrSchedule::constant(1e-2);
  Trainer trainer(graphs, options);
  const std::vector<std::string> loaded = trainer.init_from(m.weights);
  CHECK(loaded.size() == m.weights.size());
  const NamedArrays batch{{"ids", ref.tensors.at("finetune/ids").to(DType::i32)},
                          {"targets", ref.tensors.at("finetune/targets").to(DType::i32)}};
  const std::vector<double> want = ref.tensors.at("finetune/losses").to_doubles();
  std::vector<double> got;
  for (std::size_t i = 0; i < want.size(); ++i) got.push_back(trainer.step(batch).loss);
  const double loss_err = scaled_error(got, want);
  INFO(name << ": first loss " << got.front() << " (reference " << want.front() << "), last "
            << got.back() << " (reference " << want.back() << "), largest scaled difference "
            << loss_err);
  CHECK(loss_err <= 1e-4);
  CHECK(got.back() < 0.5 * got.front());  // it learned

  // The fine-tuned weights, through a Hugging Face folder and back, give the reference's logits
  // after its 20 steps.
  th::TempDir tmp("hf_finetune_" + name);
  NamedArrays tuned;
  for (const auto& [n, a] : trainer.params())
    if (m.weights.count(n)) tuned.emplace(n, a);
  REQUIRE(tuned.size() == m.weights.size());
  hf::save(tmp.dir, *m.preset->config, tuned, nullptr,
           {.bos_id = m.config.bos_id, .eos_id = m.config.eos_id});
  const hf::Model back = hf::load(tmp.dir, th::kTinyPresets);
  Generator gen(*back.preset, back.weights, std::nullopt, {.threads = 1});
  const Array& ids = batch.at("ids");
  const std::int64_t rows = ids.dims()[0], s = ids.dims()[1];
  const std::vector<double> all_ids = ids.to_doubles();
  const std::vector<double> after = ref.tensors.at("finetune/logits").to_doubles();
  const std::int64_t v = m.preset->config->vocab;
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<std::int32_t> row;
    for (std::int64_t t = 0; t < s; ++t)
      row.push_back(static_cast<std::int32_t>(all_ids[static_cast<std::size_t>(r * s + t)]));
    const std::vector<double> logits = gen.step(row, 0).to_doubles();
    const std::vector<double> want_row(after.begin() + r * s * v, after.begin() + (r + 1) * s * v);
    const double err = scaled_error(logits, want_row);
    INFO(name << " row " << r << ": largest scaled logit difference after fine-tuning " << err);
    // NOTE: 1e-3, not the 1e-4 of the losses. Measured (2026-12-06): the median logit differs
    // by 4e-6 and the largest by 2.9e-4 (Llama; Qwen2 1.4e-5), all of it one embedding element
    // whose first gradient is 4e-9, the sum of terms near 1e-3 cancelling to six digits: f32
    // keeps about one of them, and Adam's first step, g / (|g| + eps), turns that into an update
    // off by a few 1e-4 of lr. PyTorch in float32 sums in another order and lands elsewhere.
    CHECK(err <= 1e-3);
  }
}

}  // namespace

TEST_CASE("fine-tuning a Hugging Face Llama gives PyTorch's AdamW losses, step for step",
          "[hf][train]") {
  check_finetune("llama", training_graphs<kLlamaNet, kAdamW>());
}

TEST_CASE("fine-tuning a Hugging Face Qwen2 gives PyTorch's AdamW losses, step for step",
          "[hf][train]") {
  check_finetune("qwen2", training_graphs<kQwen2Net, kAdamW>());
}

TEST_CASE("fine-tuning a Hugging Face GPT-2 gives PyTorch's AdamW losses, step for step",
          "[hf][train]") {
  check_finetune("gpt2", training_graphs<kGpt2Net, kAdamW>());
}

TEST_CASE("Trainer::init_from(weights) refuses a tensor that is not a parameter", "[hf][train]") {
  TrainerOptions options;
  options.session.threads = 1;
  Trainer trainer(training_graphs<kLlamaNet, kAdamW>(), options);
  NamedArrays w{{"layers.0.self_attn.q_proj.weight", Array(DType::f32, {32, 32})},
                {"model.layers.0.self_attn.q_proj.weight", Array(DType::f32, {32, 32})}};
  CHECK_THAT(
      th::error_of([&] { trainer.init_from(w); }),
      Catch::Contains("not parameters of this model: 'model.layers.0.self_attn.q_proj.weight'"));
  w.erase("model.layers.0.self_attn.q_proj.weight");
  w.insert_or_assign("layers.0.self_attn.q_proj.weight", Array(DType::f32, {32, 31}));
  CHECK_THAT(th::error_of([&] { trainer.init_from(w); }),
             Catch::Contains("parameter 'layers.0.self_attn.q_proj.weight': expected [32, 32], got "
                             "[32, 31]"));
}

// stag::Trainer: reproducibility (same seed, same losses, bit for bit, also on a device), exact
// resume, metrics files, gradient accumulation against one large batch, evaluation weighting.
// Its errors, refusals, time boxes, bf16 weights, memory budgets and updates in the backward
// pass: test_trainer_limits.cpp.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <thread>

#include <stag/models/data/batch.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "harness.hpp"
#include "test_files.hpp"
#include "trainer_fixtures.hpp"

namespace {
using namespace stag;
using namespace trainer_fixtures;

TEST_CASE("the same seed gives the same losses bit for bit; another seed does not", "[trainer]") {
  const data::EncodedTexts d = make_rows(40, 7);
  auto losses = [&](std::uint64_t seed) {
    Trainer t(training_graphs<drop_net, kOpt>(), options(seed));
    std::vector<double> out;
    const DataSource src = source_of(d, 8, seed);
    for (std::int64_t e = 0; e < 2; ++e)
      for (std::size_t i = 0; i < src.num_batches(e); ++i)
        out.push_back(t.step(src.batch(e, i)).loss);
    return out;
  };
  const std::vector<double> a = losses(5), b = losses(5), c = losses(6);
  REQUIRE(a.size() == 10);
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(std::memcmp(&a[i], &b[i], sizeof(double)) == 0);
  }
  CHECK(a != c);
}

// The Trainer on a device session ([gpu]: the GPU under label cuda, the CUDA backend's kernels
// on the CPU under cuda_interpret): 20 steps with dropout give the CPU's losses, and a
// checkpoint written by either goes on training in the other.
TEST_CASE("the Trainer on a device gives the CPU's losses, and checkpoints cross over", "[gpu]") {
  const th::TempDir dir("trainer_device");
  const data::EncodedTexts d = make_rows(40, 7);
  const DataSource src = source_of(d, 8, 5);  // 5 batches an epoch
  // Steps from..to (1-based) on `device`, resuming from `resume` if given, saving to `save`.
  auto run = [&](Device device, int from, int to, const std::string& resume,
                 const std::string& save) {
    TrainerOptions o = options(5);
    o.session.device = device;
    Trainer t(training_graphs<drop_net, kOpt>(), o);
    if (!resume.empty()) t.resume(resume);
    std::vector<double> losses;
    for (int step = from; step <= to; ++step) {
      const std::int64_t e = (step - 1) / 5;
      losses.push_back(t.step(src.batch(e, static_cast<std::size_t>((step - 1) % 5))).loss);
      if (step % 5 == 0) t.end_epoch();
    }
    if (!save.empty()) t.save(save);
    return losses;
  };
  const Device gpu = th::gpu_device();
  const std::string from_gpu = dir / "gpu10.safetensors", from_cpu = dir / "cpu10.safetensors";
  const std::vector<double> cpu = run(Device::cpu, 1, 20, "", "");
  const std::vector<double> on_gpu = run(gpu, 1, 10, "", from_gpu);
  const std::vector<double> cpu_first = run(Device::cpu, 1, 10, "", from_cpu);
  const std::vector<double> cpu_after_gpu = run(Device::cpu, 11, 20, from_gpu, "");
  const std::vector<double> gpu_after_cpu = run(gpu, 11, 20, from_cpu, "");
  // NOTE: f32 sums in another order (the device's kernels accumulate rows in double, oneDNN in
  // f32 blocks) differ by a few ulps per step; 20 AdamW steps carry that to about 1e-6.
  const double tol = 1e-5;
  for (std::size_t i = 0; i < 10; ++i) {
    INFO("step " << i + 1 << " and " << i + 11);
    CHECK(std::abs(on_gpu[i] - cpu[i]) <= tol * std::max(1.0, cpu[i]));
    CHECK(std::abs(cpu_after_gpu[i] - cpu[i + 10]) <= tol * std::max(1.0, cpu[i + 10]));
    CHECK(std::abs(gpu_after_cpu[i] - cpu[i + 10]) <= tol * std::max(1.0, cpu[i + 10]));
  }
  CHECK(cpu_first == std::vector<double>(cpu.begin(), cpu.begin() + 10));
  std::printf(
      "trainer on %s: largest loss difference from the CPU over 20 steps: %.3g\n",
      std::string(device_name(gpu)).c_str(), [&] {
        double m = 0;
        for (std::size_t i = 0; i < 10; ++i)
          m = std::max({m, std::abs(on_gpu[i] - cpu[i]), std::abs(cpu_after_gpu[i] - cpu[i + 10]),
                        std::abs(gpu_after_cpu[i] - cpu[i + 10])});
        return m;
      }());
}

TEST_CASE("resuming from a checkpoint gives exactly the losses of an uninterrupted run",
          "[trainer]") {
  const th::TempDir dir("trainer_resume");
  const data::EncodedTexts d = make_rows(44, 8);
  for (int accumulation : {1, 2}) {
    INFO("accumulation " << accumulation);
    const FitOptions fit{.epochs = 3, .accumulation = accumulation};
    const std::string full = dir / "full.jsonl", part = dir / "part.jsonl",
                      ckpt = dir / "mid.safetensors";
    std::filesystem::remove(full);
    std::filesystem::remove(part);
    NamedArrays final_full;
    {
      Trainer t(training_graphs<drop_net, kOpt>(), options(9, full));
      t.fit(source_of(d, 8, 9), fit);
      for (const auto& [k, v] : t.params()) final_full.emplace(k, v.clone());
    }
    {  // Interrupted after 4 steps (mid-epoch), with a checkpoint at step 4 and lines logged after
       // it.
      Trainer t(training_graphs<drop_net, kOpt>(), options(9, part));
      FitOptions first = fit;
      first.checkpoint_path = ckpt;
      first.checkpoint_every = 4;
      first.stop_after = 5;
      t.fit(source_of(d, 8, 9), first);
      CHECK(t.steps_done() == 5);
    }
    Trainer t(training_graphs<drop_net, kOpt>(), options(9, part));
    const CheckpointInfo info = t.resume(ckpt);
    CHECK(info.state.step == 4);
    CHECK(t.steps_done() == 4);
    t.fit(source_of(d, 8, 9), fit);
    const std::vector<double> a = train_losses(full), b = train_losses(part);
    REQUIRE(a.size() == static_cast<std::size_t>(t.steps_done()));
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      INFO("step " << i + 1);
      CHECK(std::memcmp(&a[i], &b[i], sizeof(double)) == 0);
    }
    for (const auto& [k, v] : t.params()) {
      INFO(k);
      CHECK(std::memcmp(v.raw(), final_full.at(k).raw(), v.bytes()) == 0);
    }
  }
}

TEST_CASE("each fresh run starts its metrics file anew", "[trainer]") {
  const th::TempDir dir("trainer_metrics");
  const std::string path = dir / "m.jsonl";
  const data::EncodedTexts d = make_rows(8, 4);
  for (int run = 0; run < 2; ++run) {
    Trainer t(training_graphs<drop_net, kOpt, false>(), options(1, path));
    for (int i = 0; i < 3; ++i) t.step(batch_of(d, {0, 1, 2, 3}));
  }
  // Three steps logged (log_every 1), not six: the second run did not append to the first.
  CHECK(train_losses(path).size() == 3);
}

TEST_CASE("resuming with another seed is refused", "[trainer]") {
  const th::TempDir dir("trainer_seed");
  Trainer a(training_graphs<drop_net, kOpt, false>(), options(1));
  a.save(dir / "a.safetensors");
  Trainer b(training_graphs<drop_net, kOpt, false>(), options(2));
  CHECK_THROWS_WITH(b.resume(dir / "a.safetensors"),
                    Catch::Contains("seed 1, this run has seed 2"));
}

TEST_CASE("micro-batches of 5, 4 and 3 rows accumulate to the gradient of one 12-row batch",
          "[trainer]") {
  const data::EncodedTexts d = make_rows(12, 3);
  Trainer big(training_graphs<nodrop_net, kOpt>(), options(4));
  Trainer acc(training_graphs<nodrop_net, kOpt>(), options(4));
  const StepStats s1 = big.step(batch_of(d, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  const std::vector<Batch> micro = {batch_of(d, {0, 1, 2, 3, 4}), batch_of(d, {5, 6, 7, 8}),
                                    batch_of(d, {9, 10, 11})};
  const StepStats s2 = acc.step(micro);
  CHECK(s2.loss == Approx(s1.loss).epsilon(1e-6));
  CHECK(s2.grad_norm == Approx(s1.grad_norm).epsilon(1e-5));
  for (const auto& [name, value] : big.params()) {
    if (name.ends_with(".adam_m") || name.ends_with(".adam_v")) continue;
    INFO(name);
    th::require_close(acc.gradient(name), big.gradient(name), 1e-5);
  }
  // Equal weights would be wrong here: the 3-row batch would count as much as the 5-row one.
  std::vector<Batch> unweighted = micro;
  for (Batch& b : unweighted) b.weight = 1;
  Trainer wrong(training_graphs<nodrop_net, kOpt>(), options(4));
  CHECK(std::abs(wrong.step(unweighted).loss - s1.loss) > 1e-4);
}

TEST_CASE("evaluation weights batches by their labels and sees the trained weights", "[trainer]") {
  const data::EncodedTexts d = make_rows(24, 11);
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(12));
  for (int i = 0; i < 5; ++i) t.step(batch_of(d, {0, 1, 2, 3, 4, 5, 6, 7}));
  const std::vector<Batch> split = {batch_of(d, {8, 9, 10, 11, 12, 13, 14}),
                                    batch_of(d, {15, 16, 17})};
  const std::vector<Batch> whole = {batch_of(d, {8, 9, 10, 11, 12, 13, 14, 15, 16, 17})};
  const EvalStats a = t.evaluate(split), b = t.evaluate(whole);
  CHECK(a.count == 10);
  CHECK(a.loss == Approx(b.loss).epsilon(1e-6));
  CHECK(a.accuracy == b.accuracy);
  // An independent session with a copy of the trained weights agrees (dropout off).
  Session fresh(drop_net, {.threads = 1, .seed = 99});
  NamedArrays weights;
  for (const auto& [k, v] : t.params())
    if (fresh.params().count(k)) weights.emplace(k, v);
  fresh.set_params(weights);
  fresh.set_inputs(whole[0].inputs);
  fresh.run();
  CHECK(b.loss == Approx(fresh.result()).epsilon(1e-6));
  const Array logits = fresh.get("logits");
  double right = 0;
  for (std::int64_t r = 0; r < 10; ++r) {
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < 3; ++c)
      if (logits.at(r * 3 + c) > logits.at(r * 3 + best)) best = c;
    right += best == d.labels[static_cast<std::size_t>(8 + r)];
  }
  CHECK(b.accuracy == right / 10);
}

}  // namespace

// Data-parallel training against one process, run as `mpirun -np 2 stag_mpi_check` (ctest label
// mpi). Every rank also trains the single-process references itself (a world of one), so each
// can compare its own weights with them:
//   - N ranks with B/N rows each, all-reduced in the step, against one process taking the same
//     N parts as micro-batches (gradient accumulation): the same sums in the same order, so the
//     weights must be equal bit for bit (for N = 2; see docs/distributed.md for larger N);
//   - against one process with the whole batch of B rows: equal within a stated tolerance
//     (the gradient is summed in another order);
//   - bucket sizes (one bucket per tensor, tiny buckets, one bucket) and the parallel schedule
//     give the same weights; evaluation split across ranks gives the single-process totals;
//   - fit(): rank 0 alone writes the checkpoint and the metrics.
// `--stall S`: rank 1 sleeps S seconds before its first step; rank 0 must fail with a
// CommError (STAG_COMM_TIMEOUT) naming itself and the collective, not hang.
// Exit: 0 passed, 1 failed, 77 skipped (fewer than 2 ranks).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include <stag/models/data/batch.hpp>
#include <stag/runtime/train/trainer.hpp>
#include <stag/stag.hpp>

namespace {
using namespace stag;

constexpr ClassifierConfig kNet{.vocab = 20,
                                .max_len = 12,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 1,
                                .classes = 3,
                                .dropout = 0.0};
constexpr auto net = model([](Builder& g) { return classifier<kNet>(g); });
constexpr ClassifierConfig kDropNet = [] {
  ClassifierConfig c = kNet;
  c.dropout = 0.1;
  return c;
}();
constexpr auto drop_net = model([](Builder& g) { return classifier<kDropNet>(g); });
constexpr AdamW kOpt{.weight_decay = 0.01, .clip_norm = 1.0, .hparams_as_inputs = true};

int failures = 0;
int rank = 0;

void check(bool ok, const std::string& what) {
  if (!ok) ++failures;
  std::printf("rank %d: %s: %s\n", rank, ok ? "ok" : "FAILED", what.c_str());
  std::fflush(stdout);
}

// Rows of pseudo-random ids with varied lengths; the label is the first id mod 3.
data::EncodedTexts make_rows(std::size_t n) {
  data::EncodedTexts d;
  std::uint64_t x = 12345;
  auto next = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::int32_t>(x >> 40);
  };
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> row(static_cast<std::size_t>(2 + next() % 9));
    for (auto& v : row) v = 4 + next() % 16;
    d.labels.push_back(row[0] % 3);
    d.ids.push_back(std::move(row));
  }
  return d;
}

std::vector<Batch> global_batches(const data::EncodedTexts& d, std::size_t rows, std::size_t n) {
  std::vector<Batch> out;
  for (std::size_t b = 0; b < n; ++b) {
    std::vector<std::size_t> idx;
    for (std::size_t i = 0; i < rows; ++i) idx.push_back(b * rows + i);
    out.push_back(Batch{data::make_class_batch(d, idx).inputs()});
  }
  return out;
}

TrainerOptions options(Communicator* comm, std::size_t bucket = std::size_t{25} << 20,
                       Schedule schedule = Schedule::sequential) {
  return {.session = {.threads = 1, .schedule = schedule, .seed = 7},
          .lr = LrSchedule::cosine(3e-3, 2, 20),
          .progress = false,
          .comm = comm,
          .bucket_bytes = bucket};
}

struct Diff {
  double max_abs = 0;
  bool bitwise = true;
};
Diff compare(const NamedArrays& a, const NamedArrays& b) {
  Diff d;
  for (const auto& [name, x] : a) {
    const Array& y = b.at(name);
    if (std::memcmp(x.raw(), y.raw(), x.bytes()) != 0) d.bitwise = false;
    for (std::int64_t i = 0; i < x.numel(); ++i)
      d.max_abs = std::max(d.max_abs, std::abs(x.at(i) - y.at(i)));
  }
  return d;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

int run(int argc, char** argv) {
  Communicator& world = Communicator::world();
  rank = world.rank();
  const int n = world.size();
  if (n < 2) {
    std::printf("stag_mpi_check: a world of one; run it as mpirun -np 2 (skipped)\n");
    return 77;
  }
  const auto single = Communicator::single();
  const data::EncodedTexts d = make_rows(96);
  const std::size_t B = 8, steps = 6;
  const std::vector<Batch> batches = global_batches(d, B, steps);

  if (argc == 3 && std::strcmp(argv[1], "--stall") == 0) {
    const double stall = std::atof(argv[2]);
    Trainer t(training_graphs<net, kOpt, false>(), options(&world));
    if (rank == 1) std::this_thread::sleep_for(std::chrono::duration<double>(stall));
    const auto t0 = std::chrono::steady_clock::now();
    try {
      t.step(shard_batch(batches[0], rank, n));
    } catch (const CommError& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("rank %d: CommError after %.1f s: %s\n", rank, s, e.what());
      std::fflush(stdout);
      std::_Exit(3);  // mpirun stops the stalled rank
    }
    std::printf("rank %d: no error\n", rank);
    return 0;
  }

  // 1. N ranks against one process accumulating the same N parts: bit for bit.
  Trainer dist(training_graphs<net, kOpt, false>(), options(&world));
  Trainer accum(training_graphs<net, kOpt, true>(), options(single.get()));
  Trainer whole(training_graphs<net, kOpt, false>(), options(single.get()));
  double worst_loss = 0, worst_loss_whole = 0, worst_grad = 0, grad_scale = 0;
  NamedArrays initial;
  for (const auto& [name, a] : whole.params()) initial.emplace(name, a.clone());
  for (const Batch& g : batches) {
    std::vector<Batch> parts;
    for (int r = 0; r < n; ++r) parts.push_back(shard_batch(g, r, n));
    const StepStats a = dist.step(parts[static_cast<std::size_t>(rank)]);
    const StepStats b = accum.step(std::span<const Batch>(parts));
    const StepStats c = whole.step(g);
    worst_loss = std::max(worst_loss, std::abs(a.loss - b.loss) / std::abs(b.loss));
    worst_loss_whole = std::max(worst_loss_whole, std::abs(a.loss - c.loss) / std::abs(c.loss));
    if (a.grad_norm != b.grad_norm) worst_loss = 1;  // the all-reduced gradient differs
    if (a.step == 1)  // the same weights: the gradients differ only by the summation order
      for (const auto& [name, p] : initial) {
        if (name.find('.') == std::string::npos || !whole.params().count(name)) continue;
        Array ga, gc;
        try {
          ga = dist.gradient(name);
          gc = whole.gradient(name);
        } catch (const Error&) {
          continue;  // optimizer state, not a parameter
        }
        double scale = 0, diff = 0;
        for (std::int64_t i = 0; i < gc.numel(); ++i) {
          scale = std::max(scale, std::abs(gc.at(i)));
          diff = std::max(diff, std::abs(ga.at(i) - gc.at(i)));
        }
        grad_scale = std::max(grad_scale, scale);
        worst_grad = std::max(worst_grad, diff);
      }
  }
  const Diff da = compare(dist.params(), accum.params());
  check(da.bitwise, "weights after " + std::to_string(steps) + " steps on " + std::to_string(n) +
                        " ranks equal those of 1 process accumulating the same " +
                        std::to_string(n) + " parts, bit for bit (max |diff| " + fmt(da.max_abs) +
                        ")");
  check(worst_loss <= 1e-12,
        "losses and gradient norms equal the accumulated run's (loss rel " + fmt(worst_loss) + ")");
  // 2. Against one process with all B rows in one batch: the gradient is summed in another
  // order, so step 1's gradients agree to f32 rounding (1e-5 of the largest gradient),
  // the losses of all steps to 1e-5 relative. The weights drift further apart than that: AdamW
  // divides each gradient by its own running scale, which turns rounding-level differences in
  // near-zero gradients into differences of order lr; the bound is 1% of how far the weights
  // moved.
  const Diff dw = compare(dist.params(), whole.params());
  const Diff moved = compare(whole.params(), initial);
  // NOTE: relative to the largest gradient of all, since some are zero in exact arithmetic (a
  // key bias does not change the softmax) and hold rounding noise only.
  check(worst_grad <= 1e-5 * grad_scale,
        "against 1 process with the whole batch of " + std::to_string(B) +
            " rows: step 1's gradients differ by at most " + fmt(worst_grad) +
            " <= 1e-5 of the largest gradient " + fmt(grad_scale));
  check(worst_loss_whole <= 1e-5,
        "against the whole batch: max loss rel diff " + fmt(worst_loss_whole) + " <= 1e-5");
  check(dw.max_abs <= 1e-2 * moved.max_abs, "against the whole batch: max |weight diff| " +
                                                fmt(dw.max_abs) + " <= 1% of the largest " +
                                                "weight change " + fmt(moved.max_abs));

  // 3. Bucket sizes and the parallel schedule do not change the result.
  for (const std::size_t bucket : {std::size_t{0}, std::size_t{4096}, std::size_t{1} << 30}) {
    Trainer t(training_graphs<net, kOpt, false>(), options(&world, bucket));
    for (const Batch& g : batches) t.step(shard_batch(g, rank, n));
    check(compare(t.params(), dist.params()).bitwise,
          "bucket size " + std::to_string(bucket) + " bytes: the same weights bit for bit");
  }
  {
    Trainer t(training_graphs<net, kOpt, false>(), options(&world, 4096, Schedule::parallel));
    for (const Batch& g : batches) t.step(shard_batch(g, rank, n));
    const Diff dp = compare(t.params(), dist.params());
    check(dp.max_abs <= 1e-6,
          "parallel schedule with 4 KiB buckets: max |weight diff| " + fmt(dp.max_abs));
  }

  // 3b. Dropout masks are keyed by global row: with dropout, N ranks still follow 1 process
  // with the whole batch (within the tolerance above), where masks keyed by the local row
  // would make the losses differ by percents.
  {
    Trainer t(training_graphs<drop_net, kOpt, false>(), options(&world));
    Trainer w(training_graphs<drop_net, kOpt, false>(), options(single.get()));
    double worst = 0;
    for (const Batch& g : batches) {
      const double a = t.step(shard_batch(g, rank, n)).loss, c = w.step(g).loss;
      worst = std::max(worst, std::abs(a - c) / std::abs(c));
    }
    check(worst <= 1e-5, "dropout 0.1: losses on " + std::to_string(n) +
                             " ranks follow 1 process with the whole batch (max rel diff " +
                             fmt(worst) + " <= 1e-5)");
  }

  // 3c. Gradient accumulation on every rank (2 micro-batches per step): each rank sums its parts
  // of the micro-batches, then the sums are all-reduced once; against 1 process accumulating the
  // whole micro-batches, another summation order, so the tolerances of 2.
  {
    Trainer t(training_graphs<net, kOpt, true>(), options(&world));
    Trainer w(training_graphs<net, kOpt, true>(), options(single.get()));
    double worst = 0;
    for (std::size_t k = 0; k + 1 < batches.size(); k += 2) {
      const std::vector<Batch> mine = {shard_batch(batches[k], rank, n),
                                       shard_batch(batches[k + 1], rank, n)};
      const std::vector<Batch> whole_micro = {batches[k], batches[k + 1]};
      const double a = t.step(std::span<const Batch>(mine)).loss;
      const double c = w.step(std::span<const Batch>(whole_micro)).loss;
      worst = std::max(worst, std::abs(a - c) / std::abs(c));
    }
    const Diff dw2 = compare(t.params(), w.params());
    const Diff moved2 = compare(w.params(), initial);
    check(worst <= 1e-5 && dw2.max_abs <= 1e-2 * moved2.max_abs,
          "accumulation of 2 micro-batches on " + std::to_string(n) + " ranks: losses within " +
              fmt(worst) + " (<= 1e-5), weights within " + fmt(dw2.max_abs) +
              " (<= 1% of the change " + fmt(moved2.max_abs) + ")");
  }

  // 4. Evaluation split across the ranks gives the single-process totals.
  {
    const EvalStats e = dist.evaluate(batches), r = accum.evaluate(batches);
    check(e.count == r.count && e.batches == r.batches && e.accuracy == r.accuracy &&
              std::abs(e.loss - r.loss) <= 1e-12 * std::abs(r.loss),
          "evaluation over " + std::to_string(batches.size()) + " batches split by rank: loss " +
              fmt(e.loss) + " vs " + fmt(r.loss) + ", accuracy " + fmt(e.accuracy) + " vs " +
              fmt(r.accuracy));
  }

  // 5. fit(): batches split by rank; rank 0 writes the files.
  {
    const std::string dir = "mpi_check_fit";
    if (rank == 0) std::filesystem::remove_all(dir);
    world.barrier();
    TrainerOptions o = options(&world);
    o.metrics_path = dir + "/metrics.jsonl";
    Trainer t(training_graphs<net, kOpt, false>(), o);
    const DataSource src{[&](std::int64_t) { return batches.size(); },
                         [&](std::int64_t, std::size_t i) { return batches[i]; }};
    t.fit(src, {.epochs = 1, .checkpoint_path = dir + "/model.safetensors"});
    check(compare(t.params(), dist.params()).bitwise,
          "fit() over the global batches equals step() over this rank's parts");
    world.barrier();
    if (rank == 0) {
      const auto lines = read_metrics(dir + "/metrics.jsonl");
      check(std::filesystem::exists(dir + "/model.safetensors") && lines.size() == batches.size() &&
                lines.back().get("comm_ms").has_value(),
            "rank 0 wrote the checkpoint and " + std::to_string(lines.size()) +
                " metrics lines with comm_ms");
    }
  }
  // 6. Ranks given other global batches than rank 0 are found before the step, on every rank.
  {
    Trainer t(training_graphs<net, kOpt, false>(), options(&world));
    const DataSource skewed{
        [&](std::int64_t) { return batches.size(); },
        [&](std::int64_t, std::size_t i) { return batches[(i + (rank == 1 ? 1 : 0)) % 6]; }};
    std::string what;
    try {
      t.fit(skewed, {.epochs = 1});
    } catch (const Error& e) {
      what = e.what();
    }
    check(what.find("1 of 2 ranks were given other batches than rank 0") != std::string::npos &&
              t.steps_done() == 0,
          "a DataSource that gives rank 1 other batches is refused before step 1: " + what);
  }

  // 7. Weights that drifted apart on one rank are found and copied from rank 0.
  {
    Trainer t(training_graphs<net, kOpt, false>(), options(&world));
    t.step(shard_batch(batches[0], rank, n));
    if (rank == 1) {
      Array w = t.params().begin()->second;  // shares the trainer's storage
      w.data<float>()[0] += 1e-3f;
    }
    const int first = t.check_replicas(), second = t.check_replicas();
    check(first == 1 && second == 0, "a rank whose weights drifted is found (" +
                                         std::to_string(first) + ") and re-synchronised (" +
                                         std::to_string(second) + " differ afterwards)");
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const int rc = run(argc, argv);
    std::fflush(stdout);
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

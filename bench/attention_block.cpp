// A quick benchmark of one attention block train step at the classifier's sizes (batch 32,
// seq 128, d_model 128, 4 heads, d_ff 512), used to measure runtime changes in isolation.
// Prints per-kernel time when STAG_PROFILE is set.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cmath>

#include <stag/stag.hpp>

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int D = 128, H = 4, F = 512;

template <int Out, class S>
constexpr auto dense(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  return matmul(x, param<Shape<in, Out>>(s, "weight")) + param<Shape<Out>>(s, "bias", kZeros);
}

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, D>>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  auto s = g / "layer";
  auto guard = s.enter();
  auto heads = [&](auto t) { return transpose<1, 2>(view<batch, seq, H, D / H>(t)); };
  auto q = heads(dense<D>(s / "q", x)), k = heads(dense<D>(s / "k", x)), v = heads(dense<D>(s / "v", x));
  auto p = softmax<-1>(matmul_nt(q, k) * 0.1767767, unsqueeze<1>(unsqueeze<1>(keep)));
  auto h = x + dense<D>(s / "o", view<batch, seq, D>(transpose<1, 2>(matmul(p, v))));
  auto y = h + dense<D>(s / "ff2", gelu(dense<F>(s / "ff1", h)));
  return mean<0, 1, 2>(y * y);
});
constexpr auto step = train_step<net, AdamW{}>();

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const Schedule sched = argc > 2 && std::string(argv[2]) == "parallel" ? Schedule::parallel : Schedule::sequential;
  Session s(step, {.threads = threads, .schedule = sched, .profile = std::getenv("STAG_PROFILE") != nullptr, .seed = 1});
  Array x(DType::f32, {32, 128, D}), keep(DType::boolean, {32, 128}), lr(DType::f32, {}), t(DType::f32, {});
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.37 * static_cast<double>(i)));
  for (std::int64_t i = 0; i < keep.numel(); ++i) keep.set(i, (i % 128) < ((i / 128) % 2 ? 96 : 128));
  lr.set(0, 1e-4);
  s.set_inputs({{"x", x}, {"keep", keep}, {"lr", lr}});
  std::vector<double> times;
  for (int i = 0; i < 25; ++i) {
    t.set(0, i + 1);
    s.set_input("step", t);
    const double t0 = now_ms();
    s.run({.training = true, .step = static_cast<std::uint64_t>(i)});
    times.push_back(now_ms() - t0);
  }
  std::sort(times.begin() + 5, times.end());
  std::printf("attention block train step: median %.2f ms (threads %d, %s), arena %.1f MiB\n", times[15], threads,
              sched == Schedule::parallel ? "parallel" : "sequential", static_cast<double>(s.plan().arena_bytes()) / 1048576.0);
  if (std::getenv("STAG_KERNELS")) std::printf("%s", s.describe_kernels().c_str());
  if (std::getenv("STAG_PROFILE")) std::printf("%s", s.profile_report(30).c_str());
  return 0;
}

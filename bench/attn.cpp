// stag-bench-attn: the long-sequence attention benchmark of issue 15 §7. A training step of the
// library's multi_head_attention<8> (d_model 512, head dim 64, batch 1, causal), fused against
// unfused, for S = 512 ... 16384; the bare fused op's forward + backward, whose FLOP rate is
// compared with a plain oneDNN matmul measured in the same run; a sliding-window (W = 256)
// variant, whose time should grow linearly in S; and ALiBi (a score_mod) with that window, as
// the built-in mask and as a mask_mod (a block mask computed each step); and attention written
// by hand (causal; ALiBi minus a dense window mask), fused by the compile-time pass against the
// same chain left as written. Prints
// `bench.attn.<case>.<metric>: value unit`.
//   stag-bench-attn [--threads N] [--steps N] [--max-unfused S] [--lengths 512,1024,...]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_models.hpp"

#include <stag/models/attention_variants.hpp>
#include <stag/ops/attention/tiled_bf16.hpp>
#include <stag/ops/random.hpp>
#include <stag/stag.hpp>

namespace {
using namespace stag;
constexpr auto seq = sym<"seq">;
constexpr int kHeads = 8, kHeadDim = 64, kModel = kHeads * kHeadDim, kWindow = 256;

template <bool Fused>
constexpr auto layer = model([](Builder& g) {
  auto x = input<"x", Shape<1, seq, kModel>>(g);
  auto y = input<"y", Shape<1, seq, kModel>>(g);
  auto a = multi_head_attention<kHeads>(g / "attn", x, x, causal_keep<seq>(g), {.fused = Fused});
  return sum<0, 1, 2>(a.out * y);
});
constexpr auto fused_train = grad<layer<true>>();
constexpr auto unfused_train = grad<layer<false>>();
static_assert(fused_train.count(op::attention) == 1 && unfused_train.count(op::attention) == 0);

// The inputs of the bare-op cases: q, k, v and the loss weights w, each [1, 8, S, 64].
constexpr auto op_inputs(Builder& g) {
  using T = Tensor<canonical_t<Shape<1, kHeads, seq, kHeadDim>>>;
  struct {
    T q, k, v, w;
  } in{input<"q", Shape<1, kHeads, seq, kHeadDim>>(g),
       input<"k", Shape<1, kHeads, seq, kHeadDim>>(g),
       input<"v", Shape<1, kHeads, seq, kHeadDim>>(g),
       input<"w", Shape<1, kHeads, seq, kHeadDim>>(g)};
  return in;
}

// The bare op: q, k, v [1, 8, S, 64] with their gradients.
template <AttnMask M>
constexpr auto bare = model([](Builder& g) {
  const auto [q, k, v, w] = op_inputs(g);
  return sum<0, 1, 2, 3>(sdpa(q, k, v, {.mask = M, .window = kWindow}) * w);
});
constexpr auto causal_train = grad<bare<AttnMask::causal>, "q", "k", "v">();
// The same under autocast: the op reads bf16 q, k and v (tile products in bf16 where the CPU
// has AVX512-BF16, ops/attention/tiled_bf16.hpp; else widened to f32).
constexpr auto causal16 = autocast<bare<AttnMask::causal>>();
constexpr auto causal16_train = grad<causal16, "q", "k", "v">();
static_assert(causal16_train.count(op::cast) == 3);
constexpr auto window_train = grad<bare<AttnMask::sliding_window>, "q", "k", "v">();

// ALiBi as a score_mod over the built-in window (Mode 0) or a mask_mod window (1), and the
// kernel's built-in ALiBi over the built-in window (2).
template <int Mode>
constexpr auto bare_alibi = model([](Builder& g) {
  // Named members, not a structured binding: the lambda below captures them (clang 14).
  const auto in = op_inputs(g);
  const auto q = in.q, k = in.k, v = in.v, w = in.w;
  auto alibi = score_mod<"alibi">(variants::alibi, alibi_slopes<kHeads>(g));
  auto o = [&] {
    if constexpr (Mode == 2)
      return sdpa(q, k, v,
                  {.mask = AttnMask::sliding_window, .window = kWindow, .score = AttnScore::alibi});
    else if constexpr (Mode == 1)
      return sdpa(q, k, v, alibi, mask_mod<"window">(variants::sliding_window<kWindow>));
    else
      return sdpa(q, k, v, alibi, {.mask = AttnMask::sliding_window, .window = kWindow});
  }();
  return sum<0, 1, 2, 3>(o * w);
});
constexpr auto alibi_train = grad<bare_alibi<0>, "q", "k", "v">();
constexpr auto alibi_mask_train = grad<bare_alibi<1>, "q", "k", "v">();
constexpr auto alibi_builtin_train = grad<bare_alibi<2>, "q", "k", "v">();

// Attention written by hand, as the articles do: the fusion pass (ops/attention/fuse.hpp) turns
// it into the fused op (Fuse), or it stays the chain (the pass off). Mode 0: causal, the mask a
// causal_mask (its tiles skipped). Mode 1: ALiBi as a bias [H, S, S] minus a dense window mask
// [S, S] of W = 256 keys, both computed by the graph (the fused op reads them as tensors).
template <int Mode, bool Fuse>
constexpr auto hand = model([](Builder& g) {
  g.fuse_attention = Fuse;
  const auto [q, k, v, w] = op_inputs(g);
  auto scores = matmul_nt(q, k) * 0.125;
  auto p = [&] {
    if constexpr (Mode == 0) {
      return softmax<-1>(scores, unsqueeze<0>(unsqueeze<0>(causal_mask<seq>(g))));
    } else {
      auto pos = positions<seq>(g);
      auto dist = unsqueeze<1>(pos) - unsqueeze<0>(pos);  // i - j
      auto keep = le(full<Shape<>, DType::i32>(g, 0), dist) &
                  lt(dist, full<Shape<>, DType::i32>(g, kWindow));
      auto slope = view<kHeads, 1, 1>(alibi_slopes<kHeads>(g));
      return softmax<-1>(scores - slope * cast<DType::f32>(dist), unsqueeze<0>(unsqueeze<0>(keep)));
    }
  }();
  return sum<0, 1, 2, 3>(matmul(p, v) * w);
});
template <int Mode, bool Fuse>
constexpr auto hand_train = grad<hand<Mode, Fuse>, "q", "k", "v">();
static_assert(hand<0, true>.count(op::attention) == 1 && hand<1, true>.count(op::attention) == 1);
static_assert(hand<0, false>.count(op::attention) == 0);

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Array randn(std::vector<std::int64_t> dims, std::uint64_t seed) {
  Array a(DType::f32, std::move(dims));
  for (std::int64_t i = 0; i < a.numel(); ++i)
    a.set(i, stag::random::uniform(seed, 1, 2, static_cast<std::uint64_t>(i)) * 2.0 - 1.0);
  return a;
}

// The median step time of a session after one untimed step (which plans), and its plan peak.
std::pair<double, double> time_session(const GraphView& g, const NamedArrays& in, int threads,
                                       int steps) {
  Session s(g, {.threads = threads, .seed = 1});
  s.set_inputs(in);
  s.run({.training = true});
  std::vector<double> t;
  for (int i = 0; i < steps; ++i) {
    const double t0 = now_s();
    s.run({.training = true, .step = static_cast<std::uint64_t>(i + 1)});
    t.push_back(now_s() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], static_cast<double>(s.plan().memory.peak) / 1048576.0};
}

// Inner-product FLOPs of one fused forward + backward: q k^T and P v forward (2 products),
// q k^T, dO v^T, P^T dO, dS k and dS^T q backward (5), each 2 S_q S_k d per head, times the
// fraction of tiles computed.
double attn_flops(std::int64_t s, double fraction) {
  return 7.0 * 2.0 * static_cast<double>(kHeads) * static_cast<double>(s) * static_cast<double>(s) *
         kHeadDim * fraction;
}

void print(const std::string& name, double v, const char* unit) {
  std::printf("bench.attn.%s: %.*f %s\n", name.c_str(), v < 10 ? 3 : 1, v, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, steps = 3;
  std::int64_t max_unfused = 4096;
  std::vector<std::int64_t> lengths = {512, 1024, 2048, 4096, 8192, 16384};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--steps")
      steps = std::atoi(argv[i + 1]);
    else if (a == "--max-unfused")
      max_unfused = std::atoll(argv[i + 1]);
    else if (a == "--lengths") {
      lengths.clear();
      std::string l = argv[i + 1];
      for (std::size_t p = 0; p < l.size();) {
        const std::size_t c = l.find(',', p);
        lengths.push_back(std::atoll(l.substr(p, c - p).c_str()));
        p = c == std::string::npos ? l.size() : c + 1;
      }
    } else {
      std::fprintf(stderr, "stag-bench-attn: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  setenv("OMP_NUM_THREADS", std::to_string(threads).c_str(), 0);
  // The matmul ceilings, measured in this run: 2048^3 f32 and bf16 (f32 product) with oneDNN.
  const auto peak = [&](bool bf16) {
    auto mm = bench::onednn_matmul(2048, bf16);
    mm();
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) {
      const double t0 = now_s();
      mm();
      t.push_back(now_s() - t0);
    }
    std::sort(t.begin(), t.end());
    return 2.0 * 2048.0 * 2048.0 * 2048.0 / t[2] / 1e9;
  };
  const double peak32 = peak(false);
  print("peak.matmul_gflops", peak32, "GFLOP/s");
  const bool bf16_dot = attn::cpu_has_bf16_dot();
  const double peak16 = cpu_has_bf16_matmul() ? peak(true) : 0.0;
  if (peak16 > 0) print("peak.matmul_bf16_gflops", peak16, "GFLOP/s");
  if (!bf16_dot)
    std::printf(
        "bench.attn: this CPU has no AVX512-BF16: the op_causal_bf16 cases widen q, k "
        "and v to f32\n");
  for (const std::int64_t s : lengths) {
    const std::string tag = "s" + std::to_string(s);
    const NamedArrays layer_in{{"x", randn({1, s, kModel}, 1)}, {"y", randn({1, s, kModel}, 2)}};
    const auto [ft, fp] = time_session(fused_train, layer_in, threads, steps);
    print(tag + ".fused.step_ms", 1e3 * ft, "ms");
    print(tag + ".fused.plan_peak_mib", fp, "MiB");
    if (s <= max_unfused) {
      const auto [ut, up] = time_session(unfused_train, layer_in, threads, steps);
      print(tag + ".unfused.step_ms", 1e3 * ut, "ms");
      print(tag + ".unfused.plan_peak_mib", up, "MiB");
      print(tag + ".time_ratio", ft / ut, "x");
      print(tag + ".peak_ratio", fp / up, "x");
    }
    const NamedArrays op_in{{"q", randn({1, kHeads, s, kHeadDim}, 3)},
                            {"k", randn({1, kHeads, s, kHeadDim}, 4)},
                            {"v", randn({1, kHeads, s, kHeadDim}, 5)},
                            {"w", randn({1, kHeads, s, kHeadDim}, 6)}};
    const std::int64_t nt = (s + 63) / 64;
    const double causal_fraction =
        static_cast<double>(nt * (nt + 1) / 2) / static_cast<double>(nt * nt);
    const auto [ct, cp] = time_session(causal_train, op_in, threads, steps);
    print(tag + ".op_causal.step_ms", 1e3 * ct, "ms");
    print(tag + ".op_causal.gflops", attn_flops(s, causal_fraction) / ct / 1e9, "GFLOP/s");
    print(tag + ".op_causal.share_of_peak", attn_flops(s, causal_fraction) / ct / 1e9 / peak32,
          "x");
    // bf16 q, k and v: the bf16 tile products (where the CPU has them), then widened to f32.
    const bool setting = attn::set_bf16_products(true);
    for (const bool products : {true, false}) {
      if (products && !bf16_dot) continue;
      attn::set_bf16_products(products);
      const auto [bt16, bp16] = time_session(causal16_train, op_in, threads, steps);
      const std::string name = tag + (products ? ".op_causal_bf16" : ".op_causal_bf16_widened");
      const double gf = attn_flops(s, causal_fraction) / bt16 / 1e9;
      print(name + ".step_ms", 1e3 * bt16, "ms");
      print(name + ".gflops", gf, "GFLOP/s");
      if (peak16 > 0) print(name + ".share_of_bf16_peak", gf / peak16, "x");
      (void)bp16;
    }
    attn::set_bf16_products(setting);
    const auto [wt, wp] = time_session(window_train, op_in, threads, steps);
    print(tag + ".op_window256.step_ms", 1e3 * wt, "ms");
    print(tag + ".op_window256.plan_peak_mib", wp, "MiB");
    const auto [at, ap] = time_session(alibi_train, op_in, threads, steps);
    print(tag + ".op_alibi_window256.step_ms", 1e3 * at, "ms");
    const auto [mt, mp] = time_session(alibi_mask_train, op_in, threads, steps);
    print(tag + ".op_alibi_maskmod_window256.step_ms", 1e3 * mt, "ms");
    const auto [bt, bp] = time_session(alibi_builtin_train, op_in, threads, steps);
    print(tag + ".op_builtin_alibi_window256.step_ms", 1e3 * bt, "ms");
    // The hand-written chains: fused by the pass, and (up to --max-unfused) as written.
    // (The ALiBi chain's own bias and mask are S^2 tensors: it stops at --max-unfused too.)
    for (int mode = 0; mode < (s <= max_unfused ? 2 : 1); ++mode) {
      const std::string name = tag + (mode == 0 ? ".hand_causal" : ".hand_alibi_window256");
      const auto [ht, hp] =
          time_session(mode == 0 ? GraphView(hand_train<0, true>) : GraphView(hand_train<1, true>),
                       op_in, threads, steps);
      print(name + ".pass.step_ms", 1e3 * ht, "ms");
      print(name + ".pass.plan_peak_mib", hp, "MiB");
      if (s > max_unfused) continue;
      const auto [nt2, np] = time_session(
          mode == 0 ? GraphView(hand_train<0, false>) : GraphView(hand_train<1, false>), op_in,
          threads, steps);
      print(name + ".chain.step_ms", 1e3 * nt2, "ms");
      print(name + ".chain.plan_peak_mib", np, "MiB");
    }
    (void)cp, (void)ap, (void)mp, (void)bp;
  }
  return 0;
}

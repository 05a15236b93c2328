// The fused attention's bf16 tile products (tiled_bf16.hpp) on a CPU with AVX512-BF16: forward
// and backward against attention computed in double from the same bf16 q, k and v, within a
// bound derived from where the kernels round (plain, causal, sliding window, grouped-query
// heads, head sizes that are not a multiple of 16 or even, lengths that cross and end inside
// tiles, fewer queries than keys, peaked softmax rows, a dense keep mask with fully masked rows,
// ALiBi, soft-capping, dropout, and the backward pass without the saved row statistics).
// Skipped, and said so, on a CPU without AVX512-BF16. (tiled.hpp's f32 kernel is tested
// through the op: this file is not built with the CPU kernels' ISA flags.)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include <stag/ops/attention/tiled_bf16.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

#include "skip.hpp"

namespace {
using namespace stag;
using i64 = std::int64_t;

// Random bf16 values in [-amp, amp), and the same values as f32.
struct Bf16Tensor {
  std::vector<std::uint16_t> h;
  std::vector<float> f;
  Bf16Tensor(i64 n, std::uint64_t seed, double amp) : h(static_cast<std::size_t>(n)), f(h.size()) {
    for (i64 i = 0; i < n; ++i) {
      const double u = random::uniform(seed, 7, 3, static_cast<std::uint64_t>(i)) * 2.0 - 1.0;
      const auto j = static_cast<std::size_t>(i);
      h[j] = kernel::float_to_bf16(static_cast<float>(amp * u));
      const std::uint32_t w = static_cast<std::uint32_t>(h[j]) << 16;
      std::memcpy(&f[j], &w, 4);
    }
  }
};

struct Case {
  i64 B = 1, Hq = 2, Hkv = 2, Sq = 64, Sk = 64, Dk = 64, Dv = 64;
  attn::MaskKind mask = attn::MaskKind::none;
  double amp = 1.0;  // of q and k: the scores' spread
};

// Outputs of one run: o, lse, dq, dk, dv.
struct Result {
  std::vector<float> o, lse, dq, dk, dv;
};

struct Inputs {
  Case c;
  Bf16Tensor q, k, v;
  std::vector<float> dout;  // the incoming gradient, f32 as the graph gives it
  explicit Inputs(const Case& cs)
      : c(cs),
        q(cs.B * cs.Hq * cs.Sq * cs.Dk, 1, cs.amp),
        k(cs.B * cs.Hkv * cs.Sk * cs.Dk, 2, cs.amp),
        v(cs.B * cs.Hkv * cs.Sk * cs.Dv, 3, 1.0),
        dout(static_cast<std::size_t>(cs.B * cs.Hq * cs.Sq * cs.Dv)) {
    for (std::size_t i = 0; i < dout.size(); ++i)
      dout[i] = static_cast<float>(random::uniform(4, 7, 3, i) * 2.0 - 1.0);
  }
  // Contiguous [B, H, S, D] strides.
  attn::Problem problem() const {
    attn::Problem p;
    p.B = c.B, p.Hq = c.Hq, p.Hkv = c.Hkv, p.Sq = c.Sq, p.Sk = c.Sk, p.Dk = c.Dk, p.Dv = c.Dv;
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.Dk)));
    p.mask = c.mask;
    const i64 qs[3] = {c.Hq * c.Sq * c.Dk, c.Sq * c.Dk, c.Dk},
              ks[3] = {c.Hkv * c.Sk * c.Dk, c.Sk * c.Dk, c.Dk},
              vs[3] = {c.Hkv * c.Sk * c.Dv, c.Sk * c.Dv, c.Dv};
    std::copy(qs, qs + 3, p.q_st);
    std::copy(ks, ks + 3, p.k_st);
    std::copy(vs, vs + 3, p.v_st);
    p.qh = q.h.data(), p.kh = k.h.data(), p.vh = v.h.data();
    return p;
  }
};

// Runs the bf16 kernels forward and backward.
Result run(const Inputs& in, const attn::Problem& p, bool saved_lse = true) {
  const Case& c = in.c;
  Result r;
  r.o.resize(static_cast<std::size_t>(c.B * c.Hq * c.Sq * c.Dv));
  r.lse.resize(static_cast<std::size_t>(c.B * c.Hq * c.Sq));
  r.dq.resize(static_cast<std::size_t>(c.B * c.Hq * c.Sq * c.Dk));
  r.dk.resize(static_cast<std::size_t>(c.B * c.Hkv * c.Sk * c.Dk));
  r.dv.resize(static_cast<std::size_t>(c.B * c.Hkv * c.Sk * c.Dv));
  const i64 ost[3] = {c.Hq * c.Sq * c.Dv, c.Sq * c.Dv, c.Dv};
  attn::forward_bf16(p, r.o.data(), r.lse.data());
  attn::backward_bf16(p, r.o.data(), ost, in.dout.data(), ost, saved_lse ? r.lse.data() : nullptr,
                      r.dq.data(), r.dk.data(), r.dv.data());
  return r;
}

// Attention in double from the f32 copies of the bf16 inputs, and for every output element a
// bound on what the bf16 kernels' roundings may move it by, to first order: each of P (after
// dropout), dO and dS is rounded once to bf16 (relative error at most u = 2^-8), and the
// products sum exactly rounded values in f32:
//   o:  u sum_j p_j z_j |v_j|                       (P rounded)
//   dv: 2u sum_i p_i z_i |dO_i|                     (P and dO rounded)
//   dS: e_j = p_j (z_j u sum_x |dO_x v_jx| + dD) |dmod_j| + u |dS_j|
//       (dO rounded in dP = dO v^T; the kernel's D = o . dO reads its own o; dS rounded)
//   dq: scale sum_j e_j |k_j|,  dk: scale sum_i e_i |q_i|.
Result reference(const Inputs& in, const attn::Problem& pr, Result* bound) {
  const Case& c = in.c;
  constexpr double u = 1.0 / 256.0, ninf = -std::numeric_limits<double>::infinity();
  Result r;
  const auto n = [](i64 x) { return static_cast<std::size_t>(x); };
  std::vector<double> o(n(c.B * c.Hq * c.Sq * c.Dv)), lse(n(c.B * c.Hq * c.Sq)),
      dq(n(c.B * c.Hq * c.Sq * c.Dk)), dk(n(c.B * c.Hkv * c.Sk * c.Dk)),
      dv(n(c.B * c.Hkv * c.Sk * c.Dv));
  std::vector<double> bo(o.size()), bdq(dq.size()), bdk(dk.size()), bdv(dv.size());
  const double scale = pr.scale;
  const auto at = [&](const std::vector<float>& x, i64 i) { return static_cast<double>(x[n(i)]); };
  for (i64 b = 0; b < c.B; ++b)
    for (i64 h = 0; h < c.Hq; ++h) {
      const i64 kvh = h / (c.Hq / c.Hkv);
      const i64 qb = (b * c.Hq + h) * c.Sq, kb = (b * c.Hkv + kvh) * c.Sk;
      for (i64 i = 0; i < c.Sq; ++i) {
        const i64 qpos = i + c.Sk - c.Sq;
        std::vector<double> p(n(c.Sk)), z(n(c.Sk), 1.0), dmod(n(c.Sk), 1.0);
        double mx = ninf;
        for (i64 j = 0; j < c.Sk; ++j) {
          double s = 0;
          for (i64 x = 0; x < c.Dk; ++x)
            s += at(in.q.f, (qb + i) * c.Dk + x) * at(in.k.f, (kb + j) * c.Dk + x);
          s *= scale;
          if (pr.score_mod == attn::ScoreMod::alibi) {
            s -= std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(c.Hq)) *
                 static_cast<double>(qpos - j);
          } else if (pr.score_mod == attn::ScoreMod::softcap) {
            const double t = std::tanh(s / pr.softcap);
            s = pr.softcap * t;
            dmod[n(j)] = 1 - t * t;
          }
          bool kept = true;
          if (pr.mask != attn::MaskKind::none) kept = j <= qpos;
          if (pr.mask == attn::MaskKind::sliding_window) kept = kept && j > qpos - pr.window;
          if (pr.keep != nullptr)
            kept = kept && pr.keep[b * pr.keep_st[0] + h * pr.keep_st[1] + i * pr.keep_st[2] +
                                   j * pr.keep_st[3]];
          p[n(j)] = kept ? s : ninf;
          mx = std::max(mx, p[n(j)]);
          if (pr.dropout) {
            const auto idx = static_cast<std::uint64_t>(((b * c.Hq + h) * c.Sq + i) * c.Sk + j);
            const bool keep =
                (random::mix(pr.stream ^ (pr.index_offset + idx)) >> 11) >= pr.threshold;
            z[n(j)] = keep ? pr.drop_scale : 0.0;
          }
        }
        double l = 0;
        for (double& e : p) l += (e = mx == ninf ? 0.0 : std::exp(e - mx));
        for (double& e : p) e = l > 0 ? e / l : 0.0;
        lse[n(qb + i)] = l > 0 ? mx + std::log(l) : ninf;
        double d = 0, dd = 0;
        for (i64 x = 0; x < c.Dv; ++x) {
          double ox = 0, bx = 0;
          for (i64 j = 0; j < c.Sk; ++j) {
            ox += p[n(j)] * z[n(j)] * at(in.v.f, (kb + j) * c.Dv + x);
            bx += u * p[n(j)] * z[n(j)] * std::abs(at(in.v.f, (kb + j) * c.Dv + x));
          }
          o[n((qb + i) * c.Dv + x)] = ox;
          bo[n((qb + i) * c.Dv + x)] = bx;
          d += ox * at(in.dout, (qb + i) * c.Dv + x);
          dd += bx * std::abs(at(in.dout, (qb + i) * c.Dv + x));
        }
        for (i64 j = 0; j < c.Sk; ++j) {
          const double pj = p[n(j)], zj = z[n(j)];
          if (pj == 0) continue;
          double g = 0, gb = 0;
          for (i64 x = 0; x < c.Dv; ++x) {
            const double t = at(in.dout, (qb + i) * c.Dv + x) * at(in.v.f, (kb + j) * c.Dv + x);
            g += t;
            gb += u * std::abs(t);
          }
          const double ds = pj * (zj * g - d) * dmod[n(j)];
          const double e = pj * (zj * gb + dd) * std::abs(dmod[n(j)]) + u * std::abs(ds);
          for (i64 x = 0; x < c.Dv; ++x) {
            const double g_x = at(in.dout, (qb + i) * c.Dv + x);
            dv[n((kb + j) * c.Dv + x)] += pj * zj * g_x;
            bdv[n((kb + j) * c.Dv + x)] += 2 * u * pj * zj * std::abs(g_x);
          }
          for (i64 x = 0; x < c.Dk; ++x) {
            const double kx = at(in.k.f, (kb + j) * c.Dk + x), qx = at(in.q.f, (qb + i) * c.Dk + x);
            dq[n((qb + i) * c.Dk + x)] += scale * ds * kx;
            bdq[n((qb + i) * c.Dk + x)] += scale * e * std::abs(kx);
            dk[n((kb + j) * c.Dk + x)] += scale * ds * qx;
            bdk[n((kb + j) * c.Dk + x)] += scale * e * std::abs(qx);
          }
        }
      }
    }
  const auto f = [](const std::vector<double>& x) {
    return std::vector<float>(x.begin(), x.end());
  };
  r = {f(o), f(lse), f(dq), f(dk), f(dv)};
  if (bound) *bound = {f(bo), std::vector<float>(lse.size(), 0.f), f(bdq), f(bdk), f(bdv)};
  return r;
}

// The largest of |got - want| / (bound + slack) over a tensor, where slack = 2e-5 max |want|
// takes the f32 arithmetic both kernels share (sums in another order, the exp approximation).
// At most 1: within the bound. With no bound (the f32 kernel) it measures f32 agreement alone.
double worst(const std::vector<float>& got, const std::vector<float>& want,
             const std::vector<float>* bound) {
  double top = 0;
  for (float w : want)
    if (std::isfinite(w)) top = std::max(top, static_cast<double>(std::abs(w)));
  const double slack = 2e-5 * std::max(top, 1e-30);
  double r = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i]) && got[i] == want[i]) continue;  // a fully masked row's lse
    const double lim = slack + (bound ? (*bound)[i] : 0.0);
    r = std::max(r, std::abs(static_cast<double>(got[i]) - want[i]) / lim);
  }
  return r;
}

// Checks the bf16 kernels against the double reference within the rounding bound (and that
// they do round: without the bound, f32's slack alone is not enough for every output).
void check(const Inputs& in, const attn::Problem& p, bool saved_lse = true) {
  Result bound;
  const Result want = reference(in, p, &bound), got = run(in, p, saved_lse);
  const char* names[] = {"o", "lse", "dq", "dk", "dv"};
  const std::vector<float> Result::*fields[] = {&Result::o, &Result::lse, &Result::dq, &Result::dk,
                                                &Result::dv};
  double unbounded = 0;
  for (int t = 0; t < 5; ++t) {
    INFO(names[t]);
    CHECK(worst(got.*fields[t], want.*fields[t], &(bound.*fields[t])) <= 1.0);
    unbounded = std::max(unbounded, worst(got.*fields[t], want.*fields[t], nullptr));
  }
  CHECK(unbounded > 1.0);
}
void check(const Inputs& in) {
  check(in, in.problem());
}

}  // namespace

TEST_CASE("bf16 tile products: plain and causal attention within the rounding bound",
          "[attention][bf16]") {
  if (!attn::cpu_has_bf16_dot()) STAG_SKIP("this CPU has no AVX512-BF16");
  SECTION("one tile, no mask") {
    check(Inputs({}));
  }
  SECTION("causal, grouped-query heads, two batch rows, lengths ending inside a tile") {
    check(
        Inputs({.B = 2, .Hq = 4, .Hkv = 2, .Sq = 150, .Sk = 150, .mask = attn::MaskKind::causal}));
  }
  SECTION("fewer queries than keys, odd head sizes") {
    check(Inputs({.Sq = 37, .Sk = 201, .Dk = 33, .Dv = 17, .mask = attn::MaskKind::causal}));
  }
  SECTION("no mask, an odd number of keys, fewer than a tile, d_k != d_v") {
    check(Inputs({.Hq = 3, .Hkv = 1, .Sq = 70, .Sk = 25, .Dk = 48, .Dv = 80}));
  }
  SECTION("peaked scores") {  // q and k 4x larger: softmax rows close to one-hot
    check(Inputs({.Sq = 96, .Sk = 96, .mask = attn::MaskKind::causal, .amp = 4.0}));
  }
}

TEST_CASE("bf16 tile products: masks, score modifications and dropout", "[attention][bf16]") {
  if (!attn::cpu_has_bf16_dot()) STAG_SKIP("this CPU has no AVX512-BF16");
  const Inputs in({.B = 2, .Hq = 2, .Hkv = 1, .Sq = 131, .Sk = 131, .Dk = 32, .Dv = 32});
  attn::Problem p = in.problem();
  const auto set = [&](auto&& f) { f(p); };
  SECTION("sliding window") {
    set([](attn::Problem& p) { p.mask = attn::MaskKind::sliding_window, p.window = 40; });
  }
  SECTION("ALiBi, causal") {
    set([](attn::Problem& p) {
      p.mask = attn::MaskKind::causal, p.score_mod = attn::ScoreMod::alibi;
    });
  }
  SECTION("soft-capping") {
    set([](attn::Problem& p) { p.score_mod = attn::ScoreMod::softcap, p.softcap = 0.5f; });
  }
  SECTION("dropout") {
    set([](attn::Problem& p) {
      p.mask = attn::MaskKind::causal;
      p.dropout = true, p.stream = 0x1234, p.index_offset = 77;
      p.threshold = random::keep_threshold(0.25), p.drop_scale = 1.f / 0.75f;
    });
  }
  SECTION("dense keep mask with fully masked rows") {
    static bool mask[2][131][131];
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 131; ++i)
        for (int j = 0; j < 131; ++j) mask[b][i][j] = i % 17 != 5 && (i + 2 * j + b) % 5 != 0;
    set([](attn::Problem& p) {
      p.keep = &mask[0][0][0];
      p.keep_st[0] = 131 * 131, p.keep_st[1] = 0, p.keep_st[2] = 131, p.keep_st[3] = 1;
    });
  }
  check(in, p);
}

TEST_CASE("bf16 tile products: the backward pass without the saved row statistics",
          "[attention][bf16]") {
  if (!attn::cpu_has_bf16_dot()) STAG_SKIP("this CPU has no AVX512-BF16");
  const Inputs in({.Sq = 100, .Sk = 100, .mask = attn::MaskKind::causal});
  check(in, in.problem(), false);
}

// CPU kernels of the unary ops and unary_backward: oneDNN eltwise forward and backward
// primitives (f32). The op maps to an eltwise algorithm with its alpha/beta parameters. floor,
// clamp and mod (and clamp's backward) are own vectorised loops instead: oneDNN 2.6 has no floor
// or remainder, and its clip backward excludes the lower bound where stag (and PyTorch) include
// it. An own loop computes exactly the reference's formula (math.hpp), so they agree bit for bit.
#include <algorithm>
#include <cmath>
#include <optional>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/unary/math.hpp>
#include <stag/ops/unary/unary.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

std::optional<Eltwise> eltwise_of(OpId op, double p) {
  using a = dnnl::algorithm;
  switch (op) {
    case OpId::neg:
      return Eltwise{a::eltwise_linear, -1.f, 0.f};
    case OpId::exp:
      return Eltwise{a::eltwise_exp};
    case OpId::log:
      return Eltwise{a::eltwise_log};
    case OpId::sqrt:
      return Eltwise{a::eltwise_sqrt};
    case OpId::rsqrt:
      return Eltwise{a::eltwise_pow, 1.f, -0.5f};
    case OpId::pow_scalar:
      return Eltwise{a::eltwise_pow, 1.f, static_cast<float>(p)};
    case OpId::abs:
      return Eltwise{a::eltwise_abs};
    case OpId::relu:
      return Eltwise{a::eltwise_relu, 0.f};
    case OpId::gelu:
      return Eltwise{a::eltwise_gelu_erf};
    case OpId::gelu_tanh:
      return Eltwise{a::eltwise_gelu_tanh};
    case OpId::silu:
      return Eltwise{a::eltwise_swish, 1.f};
    case OpId::sigmoid:
      return Eltwise{a::eltwise_logistic};
    case OpId::tanh:
      return Eltwise{a::eltwise_tanh};
    case OpId::elu:
      return Eltwise{a::eltwise_elu, static_cast<float>(p)};
    default:
      return std::nullopt;
  }
}

// y[i] = f(x[i]) over n contiguous floats. y may be x (in place): each element is read before
// it is written, which `omp simd` allows.
template <class F>
STAG_VECTORIZED void map_elements(const float* x, float* y, std::int64_t n, F f) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

// x mod m (torch.remainder) for floats, equal bit for bit to unary_math::remainder (fmod-based,
// which does not vectorise: about 30 ns an element). The fast form computes x - floor(x / m) * m
// in double. NOTE: it is exact, and so equal to the fmod form after the one rounding to float,
// when 2^-28 <= |x / m| < 2^28: then floor(x / m) cannot be misrounded (x / m is at least
// 2^-24 / 2^-29 away from a whole number it is not, relative to its double rounding error),
// n * m fits 53 bits, and x - n * m is a multiple of the smaller ulp below |m|. Elsewhere
// (|x| far below or above |m|, m = 0, inf, NaN, x = 0) a second pass uses the fmod form. A
// zero result takes x's sign, as fmod's does.
STAG_VECTORIZED void remainder_block(const float* __restrict x, float* __restrict y, std::int64_t n,
                                     float m) {
  const double md = m;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const double xd = x[i];
    const double r = xd - std::floor(xd / md) * md;
    y[i] = r == 0 ? x[i] * 0.f : static_cast<float>(r);
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const double q = std::abs(static_cast<double>(x[i]) / md);
    if (!(q >= 0x1p-28 && q < 0x1p28)) y[i] = unary_math::remainder(x[i], m);
  }
}
void remainder_f32(const float* x, float* y, std::int64_t n, float m) {
  constexpr std::int64_t kBlock = 1024;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (std::int64_t b = 0; b < blocks; ++b) {
    // A copy of the block, so that the second pass reads x even when y overwrites it.
    float in[kBlock];
    const std::int64_t len = std::min(kBlock, n - b * kBlock);
    std::copy(x + b * kBlock, x + b * kBlock + len, in);
    remainder_block(in, y + b * kBlock, len, m);
  }
}

// floor, clamp and mod in f32 (contiguous input); the formulas of math.hpp.
class PiecewiseKernel final : public Kernel {
 public:
  PiecewiseKernel(const KernelNode& n, OpId op)
      : x_(n.in[0].as<const float>()),
        y_(n.out.as<float>()),
        n_(n.out.numel()),
        op_(op),
        p_(static_cast<float>(n.attr().f[0])),
        q_(static_cast<float>(n.attr().f[1])) {}
  void run() override {
    const float p = p_, q = q_;
    switch (op_) {
      case OpId::floor:
        return map_elements(x_, y_, n_, [](float v) { return std::floor(v); });
      case OpId::clamp:
        return map_elements(x_, y_, n_, [p, q](float v) { return v < p ? p : (v > q ? q : v); });
      default:  // mod
        return remainder_f32(x_, y_, n_, p);
    }
  }
  std::string describe() const override { return "own elementwise"; }

 private:
  const float* x_;
  float* y_;
  std::int64_t n_;
  OpId op_;
  float p_, q_;
};

// clamp's dx = g where lo <= x <= hi, else 0: loads both, then selects (vectorises).
class ClampBackwardKernel final : public Kernel {
 public:
  explicit ClampBackwardKernel(const KernelNode& n)
      : x_(n.in[0].as<const float>()),
        g_(n.in[2].as<const float>()),
        dx_(n.out.as<float>()),
        n_(n.out.numel()),
        lo_(static_cast<float>(n.attr().f[0])),
        hi_(static_cast<float>(n.attr().f[1])) {}
  void run() override {
    const float lo = lo_, hi = hi_;
    const float* x = x_;
    const float* g = g_;
    float* dx = dx_;
#pragma omp parallel for simd schedule(static) if (n_ > (1 << 16))
    for (std::int64_t i = 0; i < n_; ++i) {
      const float v = x[i], gi = g[i];
      dx[i] = v >= lo && v <= hi ? gi : 0.f;
    }
  }
  std::string describe() const override {
    return "own clamp backward";
  }

 private:
  const float* x_;
  const float* g_;
  float* dx_;
  std::int64_t n_;
  float lo_, hi_;
};

std::unique_ptr<Kernel> forward(const KernelNode& n, OpId op) {
  if (op == OpId::floor || op == OpId::clamp || op == OpId::mod) {
    if (n.out.dtype != DType::f32 || !n.in[0].contiguous()) return nullptr;
    return std::make_unique<PiecewiseKernel>(n, op);
  }
  const auto e = eltwise_of(op, n.attr().f[0]);
  if (!e || n.out.dtype != DType::f32 || !n.in[0].contiguous()) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, e->alg, md, e->alpha, e->beta),
      eng);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::eltwise_forward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DST, memory_of(md, n.out, eng)}},
      "onednn eltwise (" + impl_name(pd) + ")");
}

}  // namespace

#define STAG_UNARY_CPU(id)                                            \
  std::unique_ptr<Kernel> OpDef<OpId::id>::cpu(const KernelNode& n) { \
    return forward(n, OpId::id);                                      \
  }
STAG_UNARY_CPU(neg)
STAG_UNARY_CPU(exp)
STAG_UNARY_CPU(log)
STAG_UNARY_CPU(sqrt)
STAG_UNARY_CPU(rsqrt)
STAG_UNARY_CPU(pow_scalar)
STAG_UNARY_CPU(abs)
STAG_UNARY_CPU(relu)
STAG_UNARY_CPU(gelu)
STAG_UNARY_CPU(gelu_tanh)
STAG_UNARY_CPU(silu)
STAG_UNARY_CPU(sigmoid)
STAG_UNARY_CPU(tanh)
STAG_UNARY_CPU(sin)
STAG_UNARY_CPU(cos)
STAG_UNARY_CPU(elu)
STAG_UNARY_CPU(floor)
STAG_UNARY_CPU(clamp)
STAG_UNARY_CPU(mod)
#undef STAG_UNARY_CPU

// dx from (x, y, g): eltwise backward from the source x; the forward descriptor is the hint.
std::unique_ptr<Kernel> OpDef<OpId::unary_backward>::cpu(const KernelNode& n) {
  const auto op = static_cast<OpId>(n.attr().i[0]);
  if (n.out.dtype != DType::f32) return nullptr;
  for (const TensorView& v : n.in)
    if (!v.contiguous()) return nullptr;
  if (op == OpId::clamp) return std::make_unique<ClampBackwardKernel>(n);
  const auto e = eltwise_of(op, n.attr().f[0]);
  if (!e) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  dnnl::eltwise_forward::primitive_desc hint(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, e->alg, md, e->alpha, e->beta),
      eng);
  dnnl::eltwise_backward::primitive_desc pd(
      dnnl::eltwise_backward::desc(e->alg, md, md, e->alpha, e->beta), eng, hint);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::eltwise_backward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DIFF_DST, memory_of(md, n.in[2], eng)},
                                            {DNNL_ARG_DIFF_SRC, memory_of(md, n.out, eng)}},
      "onednn eltwise backward (" + impl_name(pd) + ")");
}

}  // namespace stag

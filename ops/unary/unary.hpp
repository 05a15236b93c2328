// Elementwise unary math and activations: neg, exp, log, sqrt, rsqrt, pow_scalar, abs, relu,
// gelu (erf form), gelu_tanh, silu, sigmoid, tanh, sin, cos (sinusoidal position tables), and the
// piecewise ops elu, floor, clamp and mod (below, with their own comments). Shape and dtype pass
// through unchanged. PyTorch: torch.exp(x), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x),
// x.pow(p), ... Their gradients share one op, unary_backward (attr i[0] = the forward op), so
// each backend maps it to one eltwise-backward primitive. Attrs of pow_scalar: f[0] = the
// exponent.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

namespace rules {
constexpr ShapeResult unary(const ShapeV& x, DType t, bool ints_ok) {
  if (t == DType::boolean || t == DType::bf16 || (!ints_ok && !is_float(t)))
    return shape_fail(ShapeErr::dtype);
  return shape_ok(x, t);
}
}  // namespace rules

#define STAG_UNARY_OPDEF(id, label)                        \
  template <>                                              \
  struct OpDef<OpId::id> {                                 \
    static constexpr OpInfo info{#id, label, 1};           \
    static constexpr void vjp(VjpCtx&);                    \
    static void reference(const KernelArgs&);              \
    static std::unique_ptr<Kernel> cpu(const KernelNode&); \
    static constexpr std::uint8_t in_place = 0b1;          \
  };
STAG_UNARY_OPDEF(neg, "−")
STAG_UNARY_OPDEF(exp, "exp")
STAG_UNARY_OPDEF(log, "log")
STAG_UNARY_OPDEF(sqrt, "√")
STAG_UNARY_OPDEF(rsqrt, "1/√")
STAG_UNARY_OPDEF(pow_scalar, "pow")
STAG_UNARY_OPDEF(abs, "abs")
STAG_UNARY_OPDEF(relu, "relu")
STAG_UNARY_OPDEF(gelu, "gelu")
STAG_UNARY_OPDEF(gelu_tanh, "gelu~")
STAG_UNARY_OPDEF(silu, "silu")
STAG_UNARY_OPDEF(sigmoid, "σ")
STAG_UNARY_OPDEF(tanh, "tanh")
STAG_UNARY_OPDEF(sin, "sin")
STAG_UNARY_OPDEF(cos, "cos")
STAG_UNARY_OPDEF(elu, "elu")
STAG_UNARY_OPDEF(floor, "⌊⌋")
STAG_UNARY_OPDEF(clamp, "clamp")
STAG_UNARY_OPDEF(mod, "mod")
#undef STAG_UNARY_OPDEF

// dx of a unary op from its input x, output y and output gradient g.
// Attrs: i[0] = the forward OpId, f[0] and f[1] = the forward op's f[0] and f[1] (pow's exponent,
// elu's alpha, clamp's bounds).
template <>
struct OpDef<OpId::unary_backward> {
  static constexpr OpInfo info{"unary_backward", "d", 3};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
  static constexpr std::uint8_t in_place = 0b100;  // dx may overwrite g
};

constexpr Ref unary(OpId id, std::string_view name, Ref x, bool ints_ok = false, double f0 = 0) {
  Attrs a;
  a.f[0] = f0;
  return emit(id, name, {x}, rules::unary(x.shape(), x.dtype(), ints_ok), f0 != 0 ? &a : nullptr);
}

// The typed front-ends: one static_assert, and no node when it fails (one error, no cascade).
#define STAG_UNARY_FN(fn, ints_ok, message)                                  \
  constexpr Ref fn(Ref x) {                                                  \
    return unary(OpId::fn, #fn, x, ints_ok);                                 \
  }                                                                          \
  template <class S, DType T>                                                \
  constexpr auto fn(Tensor<S, T> x) {                                        \
    constexpr bool ok = rules::unary(S::value, T, ints_ok).ok();             \
    STAG_SHAPE_CHECK(ok, "stag::" #fn ": " message, with_dtype<S, T>, void); \
    if constexpr (ok)                                                        \
      return Tensor<S, T>{x.b, fn(x.ref()).id};                              \
    else                                                                     \
      return x;                                                              \
  }
#define STAG_FLOAT_ONLY "input must be f32 or f64; for an integer tensor write cast<f32>(x) first"
#define STAG_NUMERIC "input must be f32, f64, i32 or i64 (not bool or bf16)"
STAG_UNARY_FN(neg, true, STAG_NUMERIC)
STAG_UNARY_FN(exp, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(log, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(sqrt, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(rsqrt, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(abs, true, STAG_NUMERIC)
STAG_UNARY_FN(relu, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(gelu, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(gelu_tanh, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(silu, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(sigmoid, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(tanh, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(sin, false, STAG_FLOAT_ONLY)
STAG_UNARY_FN(cos, false, STAG_FLOAT_ONLY)

constexpr Ref pow_scalar(Ref x, double p) {
  Attrs a;
  a.f[0] = p;
  return emit(OpId::pow_scalar, "pow", {x}, rules::unary(x.shape(), x.dtype(), false), &a);
}
template <class S, DType T>
constexpr auto pow_scalar(Tensor<S, T> x, double p) {
  constexpr bool ok = rules::unary(S::value, T, false).ok();
  STAG_SHAPE_CHECK(ok, "stag::pow_scalar: " STAG_FLOAT_ONLY, with_dtype<S, T>, void);
  if constexpr (ok)
    return Tensor<S, T>{x.b, pow_scalar(x.ref(), p).id};
  else
    return x;
}

// floor: the largest whole number not above x, in the input's float dtype.
//   floor(x [B, S]) -> [B, S]
// PyTorch: torch.floor(x). Float only (an integer tensor is its own floor). The gradient is
// zero almost everywhere (undefined at whole numbers), so floor passes none back, as PyTorch.
STAG_UNARY_FN(floor, false, STAG_FLOAT_ONLY)
#undef STAG_UNARY_FN

// elu: x where x > 0, alpha * (exp(x) - 1) elsewhere (Clevert et al. 2015).
//   elu(x [B, S, D], 1.0) -> [B, S, D]
// PyTorch: F.elu(x, alpha). Float only. Gradient: g where x > 0, g * (y + alpha) elsewhere
// (alpha * exp(x); at x = 0 the left-hand value alpha, as in PyTorch). Attrs: f[0] = alpha.
constexpr Ref elu(Ref x, double alpha = 1.0) {
  Attrs a;
  a.f[0] = alpha;
  return emit(OpId::elu, "elu", {x}, rules::unary(x.shape(), x.dtype(), false), &a);
}
template <class S, DType T>
constexpr auto elu(Tensor<S, T> x, double alpha = 1.0) {
  constexpr bool ok = rules::unary(S::value, T, false).ok();
  STAG_SHAPE_CHECK(ok, "stag::elu: " STAG_FLOAT_ONLY, with_dtype<S, T>, void);
  if constexpr (ok)
    return Tensor<S, T>{x.b, elu(x.ref(), alpha).id};
  else
    return x;
}

// clamp: x limited to [lo, hi] (scalar bounds): lo where x < lo, hi where x > hi, x elsewhere.
//   clamp(x [B, S, D], -1.0, 1.0) -> [B, S, D]
// PyTorch: torch.clamp(x, lo, hi). Float only; NaN stays NaN. lo > hi (or a NaN bound) stops
// graph building (PyTorch would return hi everywhere). Gradient: g where lo <= x <= hi (bounds
// included, as in PyTorch), 0 outside. Attrs: f[0] = lo, f[1] = hi.
constexpr Ref clamp(Ref x, double lo, double hi) {
  if (!(lo <= hi)) throw GraphError("stag::clamp: lo must not exceed hi (and neither may be NaN)");
  Attrs a;
  a.f[0] = lo;
  a.f[1] = hi;
  return emit(OpId::clamp, "clamp", {x}, rules::unary(x.shape(), x.dtype(), false), &a);
}
template <class S, DType T>
constexpr auto clamp(Tensor<S, T> x, double lo, double hi) {
  constexpr bool ok = rules::unary(S::value, T, false).ok();
  STAG_SHAPE_CHECK(ok, "stag::clamp: " STAG_FLOAT_ONLY, with_dtype<S, T>, void);
  if constexpr (ok)
    return Tensor<S, T>{x.b, clamp(x.ref(), lo, hi).id};
  else
    return x;
}
#undef STAG_FLOAT_ONLY

// mod: the remainder of x divided by a scalar m with the sign of m (floored division):
// x - floor(x / m) * m, in [0, m) for m > 0 and in (m, 0] for m < 0.
//   mod(rel [S, S] i32, 8) -> [S, S] i32;  mod(x [B, D], 2.5) -> [B, D]
// PyTorch: torch.remainder(x, m) (not torch.fmod, whose result has the sign of x). f32, f64,
// i32, i64. With an integer x, m must be a nonzero whole number that fits the dtype (checked
// when the graph is built); the result is exact, and floor division is then exact too:
// (x - mod(x, m)) / m. With a float x and m = 0 the result is NaN, as in PyTorch. Gradient with
// respect to x: g (the jumps at multiples of m have measure zero). Attrs: f[0] = m, i[0] = m for
// integer x.
constexpr Ref mod(Ref x, double m) {
  Attrs a;
  a.f[0] = m;
  if (is_integer(x.dtype())) {
    const double lim = x.dtype() == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
    if (!(m >= -lim && m < lim) || static_cast<double>(static_cast<std::int64_t>(m)) != m)
      throw GraphError("stag::mod: with an integer tensor m must be a whole number that fits it");
    if (m == 0) throw GraphError("stag::mod: integer remainder by zero");
    a.i[0] = static_cast<std::int64_t>(m);
  }
  return emit(OpId::mod, "mod", {x}, rules::unary(x.shape(), x.dtype(), true), &a);
}
template <class S, DType T>
constexpr auto mod(Tensor<S, T> x, double m) {
  constexpr bool ok = rules::unary(S::value, T, true).ok();
  STAG_SHAPE_CHECK(ok, "stag::mod: " STAG_NUMERIC, with_dtype<S, T>, void);
  if constexpr (ok)
    return Tensor<S, T>{x.b, mod(x.ref(), m).id};
  else
    return x;
}
#undef STAG_NUMERIC

template <class S, DType T>
constexpr auto operator-(Tensor<S, T> x) {
  return neg(x);
}
constexpr Ref operator-(Ref x) {
  return neg(x);
}

constexpr Ref unary_backward(OpId fwd, Ref x, Ref y, Ref g, double f0 = 0, double f1 = 0) {
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(fwd);
  a.f[0] = f0;
  a.f[1] = f1;
  return emit(OpId::unary_backward, "unary_backward", {x, y, g}, shape_ok(g.shape(), g.dtype()),
              &a);
}

}  // namespace stag

// Elementwise unary math and activations: neg, exp, log, sqrt, rsqrt, pow_scalar, abs, relu,
// gelu (erf form), gelu_tanh, silu, sigmoid, tanh, sin, cos (sinusoidal position tables). Shape and
// dtype pass through unchanged. PyTorch: torch.exp(x), F.gelu(x), F.gelu(x, approximate="tanh"),
// F.silu(x), x.pow(p), ... Their gradients share one op, unary_backward (attr i[0] = the forward
// op), so each backend maps it to one eltwise-backward primitive. Attrs of pow_scalar: f[0] = the
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
    static std::unique_ptr<CpuKernel> cpu(const CpuNode&); \
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
#undef STAG_UNARY_OPDEF

// dx of a unary op from its input x, output y and output gradient g.
// Attrs: i[0] = the forward OpId, f[0] = the forward op's f[0] (pow's exponent).
template <>
struct OpDef<OpId::unary_backward> {
  static constexpr OpInfo info{"unary_backward", "d", 3};
  static void reference(const KernelArgs&);
  static std::unique_ptr<CpuKernel> cpu(const CpuNode&);
  static constexpr std::uint8_t in_place = 0b100;  // dx may overwrite g
};

constexpr Ref unary(OpId id, std::string_view name, Ref x, bool ints_ok = false, double f0 = 0) {
  Attrs a;
  a.f[0] = f0;
  return emit(id, name, {x}, rules::unary(x.shape(), x.dtype(), ints_ok), f0 != 0 ? &a : nullptr);
}

// The typed front-ends: one static_assert, and no node when it fails (one error, no cascade).
#define STAG_UNARY_FN(fn, ints_ok, message)                      \
  constexpr Ref fn(Ref x) {                                      \
    return unary(OpId::fn, #fn, x, ints_ok);                     \
  }                                                              \
  template <class S, DType T>                                    \
  constexpr auto fn(Tensor<S, T> x) {                            \
    constexpr bool ok = rules::unary(S::value, T, ints_ok).ok(); \
    static_assert(ok, "stag::" #fn ": " message);                \
    if constexpr (ok)                                            \
      return Tensor<S, T>{x.b, fn(x.ref()).id};                  \
    else                                                         \
      return x;                                                  \
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
#undef STAG_UNARY_FN
#undef STAG_NUMERIC

constexpr Ref pow_scalar(Ref x, double p) {
  Attrs a;
  a.f[0] = p;
  return emit(OpId::pow_scalar, "pow", {x}, rules::unary(x.shape(), x.dtype(), false), &a);
}
template <class S, DType T>
constexpr auto pow_scalar(Tensor<S, T> x, double p) {
  constexpr bool ok = rules::unary(S::value, T, false).ok();
  static_assert(ok, "stag::pow_scalar: " STAG_FLOAT_ONLY);
  if constexpr (ok)
    return Tensor<S, T>{x.b, pow_scalar(x.ref(), p).id};
  else
    return x;
}
#undef STAG_FLOAT_ONLY

template <class S, DType T>
constexpr auto operator-(Tensor<S, T> x) {
  return neg(x);
}
constexpr Ref operator-(Ref x) {
  return neg(x);
}

constexpr Ref unary_backward(OpId fwd, Ref x, Ref y, Ref g, double f0 = 0) {
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(fwd);
  a.f[0] = f0;
  return emit(OpId::unary_backward, "unary_backward", {x, y, g}, shape_ok(g.shape(), g.dtype()),
              &a);
}

}  // namespace stag

// Elementwise arithmetic with numpy broadcasting: add, sub, mul, div (+ - * / on tensors).
//   [B, S, D] + [D] -> [B, S, D];  [B, 1, S] * [B, S, 1] -> [B, S, S]
// Shapes broadcast from the right; a dim broadcasts when it is 1; symbols are equal only by
// name, so [B, S, D] + [B, T, D] is an error even if S and T are bound to the same number.
// PyTorch: torch.add / sub / mul / div. Operands must have the same dtype (no promotion).
// Integers wrap around on overflow; integer div truncates toward zero (torch.div(a, b,
// rounding_mode="trunc")) and a zero divisor is a run-time stag::Error.
// minimum and maximum: the elementwise smaller / larger operand, same broadcasting and dtypes.
//   maximum(scores [B, S, S], floor []) -> [B, S, S]
// PyTorch: torch.minimum / torch.maximum; NaN in either operand gives NaN (reference kernel).
// Gradient: g goes to the selected operand. NOTE: on a tie (a == b) all of g goes to the first
// operand a and none to b (PyTorch splits it 0.5 / 0.5; both are subgradients).
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

namespace rules {
constexpr ShapeResult arith(const ShapeV& a, DType ta, const ShapeV& b, DType tb) {
  if (ta != tb || ta == DType::boolean || ta == DType::bf16) return shape_fail(ShapeErr::dtype);
  return algebra::broadcast(a, b, ta);
}
}  // namespace rules

// in_place: the output may overwrite an operand of the output's shape (either operand of the
// commutative ops, the first of sub and div).
#define STAG_BINARY_OPDEF(id, label, inplace)              \
  template <>                                              \
  struct OpDef<OpId::id> {                                 \
    static constexpr OpInfo info{#id, label, 2};           \
    static constexpr void vjp(VjpCtx&);                    \
    static void reference(const KernelArgs&);              \
    static std::unique_ptr<Kernel> cpu(const KernelNode&); \
    static constexpr std::uint8_t in_place = inplace;      \
  };
STAG_BINARY_OPDEF(add, "+", 0b11)
STAG_BINARY_OPDEF(sub, "-", 0b01)
STAG_BINARY_OPDEF(mul, "×", 0b11)
STAG_BINARY_OPDEF(div, "÷", 0b01)
STAG_BINARY_OPDEF(minimum, "min", 0b11)
STAG_BINARY_OPDEF(maximum, "max", 0b11)
#undef STAG_BINARY_OPDEF

#define STAG_BINARY_FN(fn, id)                                                                    \
  constexpr Ref fn(Ref a, Ref b) {                                                                \
    return emit(OpId::id, #id, {a, b}, rules::arith(a.shape(), a.dtype(), b.shape(), b.dtype())); \
  }                                                                                               \
  template <class SA, DType TA, class SB, DType TB>                                               \
  constexpr auto fn(Tensor<SA, TA> a, Tensor<SB, TB> b) {                                         \
    constexpr ShapeResult r = rules::arith(SA::value, TA, SB::value, TB);                         \
    STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,                                                    \
                     "stag::" #id                                                                 \
                     ": operands must have the same numeric dtype (no implicit casts)",           \
                     with_dtype<SA, TA>, with_dtype<SB, TB>);                                     \
    STAG_SHAPE_CHECK(r.err != ShapeErr::broadcast,                                                \
                     "stag::" #id                                                                 \
                     ": shapes are not broadcastable (numpy rules; symbols match by name)",       \
                     SA, SB);                                                                     \
    if constexpr (r.ok())                                                                         \
      return typed<r.shape, r.dtype, SA, SB>(fn(a.ref(), b.ref()));                               \
    else                                                                                          \
      return a;                                                                                   \
  }
STAG_BINARY_FN(add, add)
STAG_BINARY_FN(sub, sub)
STAG_BINARY_FN(mul, mul)
STAG_BINARY_FN(div, div)
STAG_BINARY_FN(minimum, minimum)
STAG_BINARY_FN(maximum, maximum)
#undef STAG_BINARY_FN

template <class SA, DType TA, class SB, DType TB>
constexpr auto operator+(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return add(a, b);
}
template <class SA, DType TA, class SB, DType TB>
constexpr auto operator-(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return sub(a, b);
}
template <class SA, DType TA, class SB, DType TB>
constexpr auto operator*(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return mul(a, b);
}
template <class SA, DType TA, class SB, DType TB>
constexpr auto operator/(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return div(a, b);
}

// Tensor-scalar arithmetic: the scalar becomes a [] constant of the tensor's dtype.
// NOTE: with an integer tensor the scalar must be a whole number that fits the dtype; otherwise
// `ids * 0.5` would silently multiply by 0, so graph building stops. Each message is on its
// throw line: compilers echo that line (clang only its first line) with the error.
constexpr Ref scalar_operand(Builder& g, double v, DType t) {
  if (is_integer(t)) {
    const double lo = t == DType::i32 ? -2147483648.0 : -9223372036854775808.0;
    if (!(v >= lo && v < -lo))  // also refuses NaN
      throw GraphError("stag: scalar out of range for the integer tensor's dtype; cast it first");
    if (static_cast<double>(static_cast<std::int64_t>(v)) != v)
      throw GraphError("stag: fractional scalar with an integer tensor; cast<f32>(x) first");
  }
  return scalar(g, v, t);
}
template <class S, DType T>
constexpr auto scalar_like(Tensor<S, T> a, double v) {
  return Tensor<Shape<>, T>{a.b, scalar_operand(*a.b, v, T).id};
}
template <class S, DType T>
constexpr auto operator+(Tensor<S, T> a, double s) {
  return add(a, scalar_like(a, s));
}
template <class S, DType T>
constexpr auto operator-(Tensor<S, T> a, double s) {
  return sub(a, scalar_like(a, s));
}
template <class S, DType T>
constexpr auto operator*(Tensor<S, T> a, double s) {
  return mul(a, scalar_like(a, s));
}
template <class S, DType T>
constexpr auto operator/(Tensor<S, T> a, double s) {
  return div(a, scalar_like(a, s));
}
template <class S, DType T>
constexpr auto operator+(double s, Tensor<S, T> a) {
  return add(scalar_like(a, s), a);
}
template <class S, DType T>
constexpr auto operator-(double s, Tensor<S, T> a) {
  return sub(scalar_like(a, s), a);
}
template <class S, DType T>
constexpr auto operator*(double s, Tensor<S, T> a) {
  return mul(scalar_like(a, s), a);
}
template <class S, DType T>
constexpr auto operator/(double s, Tensor<S, T> a) {
  return div(scalar_like(a, s), a);
}

constexpr Ref operator+(Ref a, Ref b) {
  return add(a, b);
}
constexpr Ref operator-(Ref a, Ref b) {
  return sub(a, b);
}
constexpr Ref operator*(Ref a, Ref b) {
  return mul(a, b);
}
constexpr Ref operator/(Ref a, Ref b) {
  return div(a, b);
}
constexpr Ref operator*(Ref a, double s) {
  return mul(a, scalar_operand(*a.b, s, a.dtype()));
}
constexpr Ref operator+(Ref a, double s) {
  return add(a, scalar_operand(*a.b, s, a.dtype()));
}

}  // namespace stag

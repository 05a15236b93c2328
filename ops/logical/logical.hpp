// Boolean logic on bool tensors with numpy broadcasting: logical_and (&), logical_or (|),
// logical_not (! or ~). Masks combine with these:
//   causal_mask<seq, seq>(g) & unsqueeze<1>(padding_mask<seq>(lengths)) -> [B, seq, seq]
// Operands must be bool (compare or cast first); no gradient flows through logic.
// PyTorch: torch.logical_and / logical_or / logical_not, or a & b, a | b, ~a on bool tensors.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::logical_and> {
  static constexpr OpInfo info{"logical_and", "∧", 2, 0b11};
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::logical_or> {
  static constexpr OpInfo info{"logical_or", "∨", 2, 0b11};
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::logical_not> {
  static constexpr OpInfo info{"logical_not", "¬", 1, 0b1};
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult logical(const ShapeV& a, DType ta, const ShapeV& b, DType tb) {
  if (ta != DType::boolean || tb != DType::boolean) return shape_fail(ShapeErr::dtype);
  return algebra::broadcast(a, b, DType::boolean);
}
constexpr ShapeResult logical_not(const ShapeV& x, DType t) {
  if (t != DType::boolean) return shape_fail(ShapeErr::dtype);
  return shape_ok(x, DType::boolean);
}
}  // namespace rules

constexpr Ref logical_not(Ref x) {
  return emit(OpId::logical_not, "logical_not", {x}, rules::logical_not(x.shape(), x.dtype()));
}
template <class S, DType T>
constexpr auto logical_not(Tensor<S, T> x) {
  STAG_SHAPE_CHECK(T == DType::boolean,
                   "stag::logical_not: the operand must be a bool tensor (compare or cast first)",
                   S);
  return Tensor<S, DType::boolean>{x.b, T == DType::boolean ? logical_not(x.ref()).id : x.id};
}

#define STAG_LOGICAL_FN(fn)                                                                      \
  constexpr Ref fn(Ref a, Ref b) {                                                               \
    return emit(OpId::fn, #fn, {a, b},                                                           \
                rules::logical(a.shape(), a.dtype(), b.shape(), b.dtype()));                     \
  }                                                                                              \
  template <class SA, DType TA, class SB, DType TB>                                              \
  constexpr auto fn(Tensor<SA, TA> a, Tensor<SB, TB> b) {                                        \
    constexpr ShapeResult r = rules::logical(SA::value, TA, SB::value, TB);                      \
    STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,                                                   \
                     "stag::" #fn ": operands must be bool tensors (compare or cast first)", SA, \
                     SB);                                                                        \
    STAG_SHAPE_CHECK(r.err != ShapeErr::broadcast,                                               \
                     "stag::" #fn                                                                \
                     ": shapes are not broadcastable (numpy rules; symbols match by name)",      \
                     SA, SB);                                                                    \
    if constexpr (r.ok())                                                                        \
      return typed<r.shape, DType::boolean, SA, SB>(fn(a.ref(), b.ref()));                       \
    else                                                                                         \
      return Tensor<SA, DType::boolean>{a.b, a.id};                                              \
  }
STAG_LOGICAL_FN(logical_and)
STAG_LOGICAL_FN(logical_or)
#undef STAG_LOGICAL_FN

// Operators on typed tensors; on non-bool operands they stop with logical_*'s message.
template <class SA, DType TA, class SB, DType TB>
constexpr auto operator&(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return logical_and(a, b);
}
template <class SA, DType TA, class SB, DType TB>
constexpr auto operator|(Tensor<SA, TA> a, Tensor<SB, TB> b) {
  return logical_or(a, b);
}
template <class S, DType T>
constexpr auto operator!(Tensor<S, T> x) {
  return logical_not(x);
}
template <class S, DType T>
constexpr auto operator~(Tensor<S, T> x) {
  return logical_not(x);
}
constexpr Ref operator&(Ref a, Ref b) {
  return logical_and(a, b);
}
constexpr Ref operator|(Ref a, Ref b) {
  return logical_or(a, b);
}
constexpr Ref operator!(Ref x) {
  return logical_not(x);
}

}  // namespace stag

// where: elementwise select, a where cond is true and b elsewhere, all three broadcast.
//   where(keep [B, 1, S], scores [B, S, S], fill []) -> [B, S, S]
// cond must be bool; a and b have the same dtype (any), which is the result's. A double in
// place of a or b becomes a [] constant of the other's dtype: where(keep, x, 0.0).
// PyTorch: torch.where(cond, a, b). Gradients: a gets g where cond is true, b where it is
// false, each summed back over the dims it was broadcast along (sum_to); cond gets none.
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::where> {
  static constexpr OpInfo info{"where", "where", 3, 0b001};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult where(const ShapeV& c, DType tc, const ShapeV& a, DType ta, const ShapeV& b,
                            DType tb) {
  if (tc != DType::boolean) return shape_fail(ShapeErr::mask_dtype);
  if (ta != tb) return shape_fail(ShapeErr::dtype);
  const ShapeResult ca = algebra::broadcast(c, a, ta);
  if (!ca.ok()) return ca;
  return algebra::broadcast(ca.shape, b, ta);
}
}  // namespace rules

constexpr Ref where(Ref cond, Ref a, Ref b) {
  return emit(OpId::where, "where", {cond, a, b},
              rules::where(cond.shape(), cond.dtype(), a.shape(), a.dtype(), b.shape(), b.dtype()));
}

template <class SC, DType TC, class SA, DType TA, class SB, DType TB>
constexpr auto where(Tensor<SC, TC> cond, Tensor<SA, TA> a, Tensor<SB, TB> b) {
  constexpr ShapeResult r = rules::where(SC::value, TC, SA::value, TA, SB::value, TB);
  // The pair that does not broadcast: cond and a, or (cond with a) and b.
  using BadPair = std::conditional_t<algebra::broadcast(SC::value, SA::value).ok(), SB, SA>;
  using BadFirst = std::conditional_t<algebra::broadcast(SC::value, SA::value).ok(), SA, SC>;
  STAG_SHAPE_CHECK(r.err != ShapeErr::mask_dtype,
                   "stag::where: the condition must be a bool tensor (compare or cast first)", SC,
                   SA);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::where: a and b must have the same dtype (no implicit casts)", SA, SB);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::broadcast,
      "stag::where: cond, a and b are not broadcastable (numpy rules; symbols match by "
      "name)",
      BadFirst, BadPair);
  if constexpr (r.ok())
    return typed<r.shape, TA, SC, SA, SB>(where(cond.ref(), a.ref(), b.ref()));
  else
    return a;
}
template <class SC, DType TC, class SA, DType TA>
constexpr auto where(Tensor<SC, TC> cond, Tensor<SA, TA> a, double b) {
  return where(cond, a, Tensor<Shape<>, TA>{a.b, scalar(*a.b, b, TA).id});
}
template <class SC, DType TC, class SB, DType TB>
constexpr auto where(Tensor<SC, TC> cond, double a, Tensor<SB, TB> b) {
  return where(cond, Tensor<Shape<>, TB>{b.b, scalar(*b.b, a, TB).id}, b);
}

}  // namespace stag

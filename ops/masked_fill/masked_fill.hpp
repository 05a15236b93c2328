// masked_fill: x with `value` wherever mask is TRUE (PyTorch semantics).
//   masked_fill(scores [B, H, S, S], pad [B, 1, 1, S], -1e9) -> [B, H, S, S]
// NOTE: true means FILL here, the opposite of softmax's keep mask: with a keep mask write
// masked_fill(x, !keep, v). The mask follows softmax's rules: bool, the same rank as x, each dim
// equal to x's or 1; a [B, S] padding mask on [B, H, S, S] scores must be unsqueezed to
// [B, 1, 1, S] explicitly (a silent right-aligned broadcast would mask the wrong dim).
// Any dtype; for integer x the value saturates to the type's range (NaN becomes 0).
// PyTorch: x.masked_fill(mask, value). Attrs: f[0] = value.
// Gradient: g with the filled positions zeroed (masked_fill(g, mask, 0)); the mask gets none.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::masked_fill> {
  static constexpr OpInfo info{"masked_fill", "masked_fill", 2, 0b10};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult masked_fill(const ShapeV& x, DType t, const ShapeV& m, DType tm) {
  if (tm != DType::boolean) return shape_fail(ShapeErr::mask_dtype);
  if (m.rank != x.rank) return shape_fail(ShapeErr::mask_rank);
  if (!algebra::broadcasts_to(m, x)) return shape_fail(ShapeErr::mask_broadcast);
  return shape_ok(x, t);
}
}  // namespace rules

constexpr Ref masked_fill(Ref x, Ref mask, double value) {
  Attrs a;
  a.f[0] = value;
  return emit(OpId::masked_fill, "masked_fill", {x, mask},
              rules::masked_fill(x.shape(), x.dtype(), mask.shape(), mask.dtype()), &a);
}

template <class S, DType T, class SM, DType TM>
constexpr auto masked_fill(Tensor<S, T> x, Tensor<SM, TM> mask, double value) {
  constexpr ShapeResult r = rules::masked_fill(S::value, T, SM::value, TM);
  STAG_SHAPE_CHECK(r.err != ShapeErr::mask_dtype,
                   "stag::masked_fill: the mask must be a bool tensor", S, SM);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::mask_rank,
      "stag::masked_fill: the mask's rank differs from the input's rank; unsqueeze it "
      "explicitly (a [B, S] padding mask becomes [B, 1, 1, S] for [B, H, S, S] scores)",
      S, SM);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::mask_broadcast,
      "stag::masked_fill: the mask does not broadcast to the input (each dim equal or 1)", S, SM);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, masked_fill(x.ref(), mask.ref(), value).id};
  else
    return x;
}

}  // namespace stag

// mse_loss: the mean of squared differences, a [] scalar.
//   mse_loss(pred [B, S, D], target [B, S, D]) -> []
// pred and target must have equal shapes (no broadcasting: a [B, 1] target for [B] predictions
// is the classic silent bug this refuses) and the same float dtype (f32 or f64).
// NOTE: an empty input (a symbol bound to 0) gives 0, where PyTorch gives NaN (0 / 0).
// PyTorch: F.mse_loss(pred, target) (reduction="mean"). No attrs.
// Gradient from forward ops: dpred = 2 (pred - target) g / numel(pred), dtarget = -dpred.
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::mse_loss> {
  static constexpr OpInfo info{"mse_loss", "mse", 2};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult mse_loss(const ShapeV& pred, DType tp, const ShapeV& target, DType tt) {
  if ((tp != DType::f32 && tp != DType::f64) || tt != tp) return shape_fail(ShapeErr::dtype);
  if (!(pred == target)) return shape_fail(ShapeErr::shape_mismatch);
  return shape_ok(ShapeV{}, tp);
}
}  // namespace rules

constexpr Ref mse_loss(Ref pred, Ref target) {
  return emit(OpId::mse_loss, "mse_loss", {pred, target},
              rules::mse_loss(pred.shape(), pred.dtype(), target.shape(), target.dtype()));
}

template <class SP, DType TP, class ST, DType TT>
constexpr auto mse_loss(Tensor<SP, TP> pred, Tensor<ST, TT> target) {
  constexpr ShapeResult r = rules::mse_loss(SP::value, TP, ST::value, TT);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::mse_loss: pred and target must both be f32 or both be f64", SP, ST);
  STAG_SHAPE_CHECK(r.err != ShapeErr::shape_mismatch,
                   "stag::mse_loss: pred and target must have the same shape (no broadcasting); "
                   "view or squeeze one of them",
                   SP, ST);
  if constexpr (r.ok())
    return Tensor<Shape<>, TP>{pred.b, mse_loss(pred.ref(), target.ref()).id};
  else
    return Tensor<Shape<>, TP>{pred.b, scalar(*pred.b, 0.0, TP).id};  // one error, not two
}

}  // namespace stag

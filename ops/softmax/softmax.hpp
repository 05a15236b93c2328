// softmax and log_softmax along one axis, optionally with a boolean mask (true = keep).
//   softmax<-1>(scores [B, H, S, T]) -> [B, H, S, T]
//   softmax<-1>(scores [B, H, S, T], keep [B, 1, 1, T]) -> [B, H, S, T]
// The mask must be bool, of the same rank as the input, and broadcast to it (numpy rules);
// masked positions get weight 0. NOTE: a row whose every position is masked (or is -inf) gives
// all zeros, not NaN: padding queries then contribute nothing instead of poisoning the batch.
// PyTorch: F.softmax(x.masked_fill(~keep, -inf), dim) (which gives NaN on fully masked rows).
// Attrs: i[0] = the axis (normalised). Gradients: softmax_backward(y, g) and
// log_softmax_backward(y, g), which need only the output y (saved by the forward pass).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::softmax> {
  static constexpr OpInfo info{"softmax", "softmax", -1, 0b10};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};
template <>
struct OpDef<OpId::log_softmax> {
  static constexpr OpInfo info{"log_softmax", "log_softmax", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};
template <>
struct OpDef<OpId::softmax_backward> {
  static constexpr OpInfo info{"softmax_backward", "dsoftmax", 2};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};
template <>
struct OpDef<OpId::log_softmax_backward> {
  static constexpr OpInfo info{"log_softmax_backward", "dlog_softmax", 2};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

namespace rules {
constexpr ShapeResult softmax(const ShapeV& x, DType t, int axis) {
  if (!is_float(t) || t == DType::bf16) return shape_fail(ShapeErr::dtype);
  if (normalize_axis(axis, x.rank) < 0) return shape_fail(ShapeErr::axis);
  return shape_ok(x, t);
}
constexpr ShapeResult masked_softmax(const ShapeV& x, DType t, int axis, const ShapeV& m,
                                     DType tm) {
  const ShapeResult r = softmax(x, t, axis);
  if (!r.ok()) return r;
  if (tm != DType::boolean) return shape_fail(ShapeErr::mask_dtype);
  if (m.rank != x.rank) return shape_fail(ShapeErr::mask_rank);
  if (!algebra::broadcasts_to(m, x)) return shape_fail(ShapeErr::mask_broadcast);
  return r;
}
}  // namespace rules

namespace detail {
constexpr Attrs axis_attr(int axis, int rank) {
  Attrs a;
  a.i[0] = normalize_axis(axis, rank);
  return a;
}
}  // namespace detail

constexpr Ref softmax(Ref x, int axis) {
  const Attrs a = detail::axis_attr(axis, x.rank());
  return emit(OpId::softmax, "softmax", {x}, rules::softmax(x.shape(), x.dtype(), axis), &a);
}
constexpr Ref softmax(Ref x, int axis, Ref keep) {
  const Attrs a = detail::axis_attr(axis, x.rank());
  return emit(OpId::softmax, "softmax", {x, keep},
              rules::masked_softmax(x.shape(), x.dtype(), axis, keep.shape(), keep.dtype()), &a);
}
constexpr Ref log_softmax(Ref x, int axis) {
  const Attrs a = detail::axis_attr(axis, x.rank());
  return emit(OpId::log_softmax, "log_softmax", {x}, rules::softmax(x.shape(), x.dtype(), axis),
              &a);
}
constexpr Ref softmax_backward(Ref y, Ref g, int axis) {
  const Attrs a = detail::axis_attr(axis, y.rank());
  return emit(OpId::softmax_backward, "softmax_backward", {y, g}, shape_ok(y.shape(), y.dtype()),
              &a);
}
constexpr Ref log_softmax_backward(Ref y, Ref g, int axis) {
  const Attrs a = detail::axis_attr(axis, y.rank());
  return emit(OpId::log_softmax_backward, "log_softmax_backward", {y, g},
              shape_ok(y.shape(), y.dtype()), &a);
}

template <int Axis, class S, DType T>
constexpr auto softmax(Tensor<S, T> x) {
  constexpr ShapeResult r = rules::softmax(S::value, T, Axis);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::softmax: input must be floating point (f32 or f64)", with_dtype<S, T>,
                   void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::softmax: axis out of range for the input's rank",
                   S, void);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, softmax(x.ref(), Axis).id};
  else
    return x;
}

template <int Axis, class S, DType T, class SM, DType TM>
constexpr auto softmax(Tensor<S, T> x, Tensor<SM, TM> keep) {
  constexpr ShapeResult r = rules::masked_softmax(S::value, T, Axis, SM::value, TM);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::softmax: input must be floating point (f32 or f64)", with_dtype<S, T>,
                   void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::softmax: axis out of range for the input's rank",
                   S, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::mask_dtype, "stag::softmax: the mask must be a bool tensor",
                   S, SM);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::mask_rank,
      "stag::softmax: the mask and the scores differ in rank; unsqueeze it "
      "explicitly (a [B, S] padding mask becomes [B, 1, 1, S] for [B, H, S, S] scores)",
      S, SM);
  STAG_SHAPE_CHECK(r.err != ShapeErr::mask_broadcast,
                   "stag::softmax: the mask does not broadcast to the scores (each dim equal or 1)",
                   S, SM);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, softmax(x.ref(), Axis, keep.ref()).id};
  else
    return x;
}

template <int Axis, class S, DType T>
constexpr auto log_softmax(Tensor<S, T> x) {
  constexpr ShapeResult r = rules::softmax(S::value, T, Axis);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::log_softmax: input must be floating point (f32 or f64)", with_dtype<S, T>,
                   void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis,
                   "stag::log_softmax: axis out of range for the input's rank", S, void);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, log_softmax(x.ref(), Axis).id};
  else
    return x;
}

}  // namespace stag

// The pass that fuses softmax's attention chains into one attention op runs in every model
// that can build one (every model that includes this header).
#include <stag/ops/attention/fuse.hpp>

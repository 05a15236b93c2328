// cumsum: the inclusive running sum along one axis; with reverse_scan, from the end.
//   cumsum<1>(x [B, S, D]) -> [B, S, D]          y[b, i, d] = sum over j <= i of x[b, j, d]
//   cumsum<-1>(x [B, S], reverse_scan) -> [B, S]  y[b, i] = sum over j >= i of x[b, j]
// f32 and f64, any rank >= 1, negative axes allowed. The sum runs sequentially along the axis in
// every kernel (deterministic; the CPU kernel parallelises over the other axes only). PyTorch:
// torch.cumsum(x, dim); the reverse form is x.flip(dim).cumsum(dim).flip(dim). Gradient: the
// cumsum of g in the other direction (the flag flipped; no flips, no extra node).
// Attrs: i[0] = the axis (normalised), i[1] = 1 for reverse_scan.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::cumsum> {
  static constexpr OpInfo info{"cumsum", "cumsum", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// The option of cumsum that sums from the end of the axis.
struct ReverseScan {};
inline constexpr ReverseScan reverse_scan{};

namespace rules {
constexpr ShapeResult cumsum(const ShapeV& x, DType t, int axis) {
  if (!is_float(t) || t == DType::bf16) return shape_fail(ShapeErr::dtype);
  if (normalize_axis(axis, x.rank) < 0) return shape_fail(ShapeErr::axis);
  return shape_ok(x, t);
}
}  // namespace rules

constexpr Ref cumsum(Ref x, int axis, bool reverse = false) {
  Attrs a;
  a.i[0] = normalize_axis(axis, x.rank());
  a.i[1] = reverse ? 1 : 0;
  return emit(OpId::cumsum, "cumsum", {x}, rules::cumsum(x.shape(), x.dtype(), axis), &a);
}

// Typed form: cumsum<axis>(x) or cumsum<axis>(x, reverse_scan).
template <int Axis, class S, DType T, class... R>
constexpr auto cumsum(Tensor<S, T> x, R...) {
  static_assert((std::is_same_v<R, ReverseScan> && ...) && sizeof...(R) <= 1,
                "stag::cumsum: the only option is stag::reverse_scan");
  constexpr ShapeResult r = rules::cumsum(S::value, T, Axis);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::cumsum: input must be f32 or f64; for an integer tensor write "
                   "cast<f32>(x) first",
                   with_dtype<S, T>, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis,
                   "stag::cumsum: axis out of range for the input's rank (valid: -rank .. rank-1; "
                   "a [] scalar has no axis)",
                   S, void);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, cumsum(x.ref(), Axis, sizeof...(R) > 0).id};
  else
    return x;
}

}  // namespace stag

// slice: the elements [Start, End) of one axis, with bounds fixed in the graph.
//   slice<-1, 0, 32>(x [B, H, S, 64]) -> [B, H, S, 32];  slice<1, 2, 7>(x [B, 13]) -> [B, 5]
// Start >= 0 and End > Start; the result's axis has the static length End - Start. On a static
// dim the bounds are checked at compile time; on a symbolic dim ([seq, D]) when the symbol is
// bound: the kernel throws stag::Error naming the node, the dim and the bounds.
// PyTorch: x.narrow(axis, start, end - start), i.e. x[..., start:end] (no negative bounds here).
// Attrs: i[0] = axis (normalised), i[1] = start, i[2] = end. Gradient: slice_backward(g), which
// writes g into zeros of the input's shape (the same attrs).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::slice> {
  static constexpr OpInfo info{"slice", "slice", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::slice_backward> {
  static constexpr OpInfo info{"slice_backward", "dslice", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult slice(const ShapeV& x, DType t, int axis, std::int64_t start,
                            std::int64_t end) {
  return algebra::slice(x, axis, start, end, t);
}
}  // namespace rules

namespace detail {
constexpr Attrs slice_attrs(int axis, int rank, std::int64_t start, std::int64_t end) {
  Attrs a;
  a.i[0] = normalize_axis(axis, rank);
  a.i[1] = start;
  a.i[2] = end;
  return a;
}
}  // namespace detail

constexpr Ref slice(Ref x, int axis, std::int64_t start, std::int64_t end) {
  const Attrs a = detail::slice_attrs(axis, x.rank(), start, end);
  return emit(OpId::slice, "slice", {x}, rules::slice(x.shape(), x.dtype(), axis, start, end), &a);
}

// The gradient of slice: g [.., End - Start, ..] placed at [Start, End) of zeros of `input`.
constexpr Ref slice_backward(Ref g, const ShapeV& input, int axis, std::int64_t start,
                             std::int64_t end) {
  const Attrs a = detail::slice_attrs(axis, input.rank, start, end);
  if (!(rules::slice(input, g.dtype(), axis, start, end).shape == g.shape()))
    throw GraphError("stag: slice_backward: the gradient's shape is not the slice's shape");
  return emit(OpId::slice_backward, "slice_backward", {g}, shape_ok(input, g.dtype()), &a);
}

template <int Axis, std::int64_t Start, std::int64_t End, class S, DType T>
constexpr auto slice(Tensor<S, T> x) {
  static_assert(Start >= 0, "stag::slice: Start must be >= 0 (negative bounds are not supported)");
  static_assert(End > Start, "stag::slice: End must be greater than Start (the range is empty)");
  constexpr bool bounds_ok = Start >= 0 && End > Start;  // one mistake, one message
  constexpr ShapeResult r = rules::slice(S::value, T, Axis, Start, End);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::slice: axis out of range for the input's rank",
                   S, void);
  STAG_SHAPE_CHECK(!bounds_ok || r.err != ShapeErr::slice_range,
                   "stag::slice: End is beyond the size of the (static) dim being sliced", S, void);
  if constexpr (r.ok())
    return typed<r.shape, T, S>(slice(x.ref(), Axis, Start, End));
  else
    return x;
}

}  // namespace stag

// argmax: the index of the largest element along one axis, as i32.
//   argmax<-1>(logits [B, S, V]) -> [B, S] i32;  argmax<-1>(logits, stag::keepdim) -> [B, S, 1]
// Ties give the first index; a NaN counts as larger than any number (the first NaN wins), as
// in PyTorch. Input: f32, f64, i32 or i64. An empty axis has no argmax: the kernel throws.
// PyTorch: torch.argmax(x, dim, keepdim) (which returns int64). No gradient (integer output).
// Attrs: i[0] = axis (normalised), i[1] = keepdim.
#pragma once

#include <stag/ops/op.hpp>
#include <stag/ops/reduce/reduce.hpp>

namespace stag {

template <>
struct OpDef<OpId::argmax> {
  static constexpr OpInfo info{"argmax", "argmax", 1, 0b1};
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult argmax(const ShapeV& x, DType t, int axis, bool keep) {
  const int ax = normalize_axis(axis, x.rank);
  if (ax < 0) return shape_fail(ShapeErr::axis);
  if (t == DType::boolean || t == DType::bf16) return shape_fail(ShapeErr::dtype);
  return algebra::reduce(x, 1u << ax, keep, DType::i32);
}
}  // namespace rules

constexpr Ref argmax(Ref x, int axis, bool keep = false) {
  Attrs a;
  a.i[0] = normalize_axis(axis, x.rank());
  a.i[1] = keep ? 1 : 0;
  return emit(OpId::argmax, "argmax", {x}, rules::argmax(x.shape(), x.dtype(), axis, keep), &a);
}

template <int Axis, class S, DType T, class... K>
constexpr auto argmax(Tensor<S, T> x, K...) {
  static_assert((std::is_same_v<K, KeepDim> && ...) && sizeof...(K) <= 1,
                "stag::argmax: the only option is stag::keepdim");
  constexpr bool keep = sizeof...(K) > 0;
  constexpr ShapeResult r = rules::argmax(S::value, T, Axis, keep);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::argmax: axis out of range for the input's rank",
                   S, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::argmax: input must be f32, f64, i32 or i64 (cast a bool mask first)",
                   with_dtype<S, T>, void);
  if constexpr (r.ok())
    return typed<r.shape, DType::i32, S>(argmax(x.ref(), Axis, keep));
  else
    return Tensor<S, DType::i32>{x.b, x.id};
}

}  // namespace stag

// permute / transpose: reorder dims. PyTorch: x.permute(...), x.transpose(i, j).
//   transpose<1, 2>(x [B, S, H, Dh]) -> [B, H, S, Dh];  permute<0, 2, 1, 3>(x) is the same.
// Axes may be negative. The runtime executes a permute as a strided view when its consumers
// accept strides (matmul does), and as a reorder copy otherwise.
// Attrs: i[k] = the input axis that becomes output axis k.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::permute> {
  static constexpr OpInfo info{"permute", "permute", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

constexpr Ref permute(Ref x, const int* perm, int n) {
  Attrs a;
  for (int i = 0; i < n && i < kMaxIntAttrs; ++i) a.i[i] = normalize_axis(perm[i], x.rank());
  return emit(OpId::permute, "permute", {x}, algebra::permute(x.shape(), perm, n, x.dtype()), &a);
}
constexpr Ref transpose(Ref x, int i, int j) {
  const int r = x.rank();
  const int ni = normalize_axis(i, r), nj = normalize_axis(j, r);
  if (ni < 0 || nj < 0) raise_shape_error(ShapeErr::axis);
  int perm[kMaxRank] = {};
  for (int k = 0; k < r; ++k) perm[k] = k;
  perm[ni] = nj;
  perm[nj] = ni;
  return permute(x, perm, r);
}

template <int... P, class S, DType T>
constexpr auto permute(Tensor<S, T> x) {
  constexpr int perm[sizeof...(P) + 1] = {P..., 0};
  constexpr ShapeResult r = algebra::permute(S::value, perm, sizeof...(P), T);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis,
                   "stag::permute: an axis is out of range for the input's rank", S, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::permutation,
                   "stag::permute: the axes must name every input dim exactly once", S, void);
  if constexpr (r.ok())
    return typed<r.shape, T, S>(permute(x.ref(), perm, sizeof...(P)));
  else
    return x;
}

template <int I, int J, class S, DType T>
constexpr auto transpose(Tensor<S, T> x) {
  constexpr ShapeResult r = algebra::transpose(S::value, I, J, T);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis,
                   "stag::transpose: axis out of range for the input's rank", S, void);
  if constexpr (r.ok())
    return typed<r.shape, T, S>(transpose(x.ref(), I, J));
  else
    return x;
}

}  // namespace stag

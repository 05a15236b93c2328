// layer_norm: normalise over the trailing dims, then scale and shift.
//   layer_norm(x [B, S, D], w [D], b [D], eps = 1e-5) -> [B, S, D]
//   layer_norm(x [B, S, D], w [S, D], b [S, D])       -> [B, S, D]  (normalised over S and D)
//   layer_norm<1>(x [B, S, D], eps = 1e-5)            -> [B, S, D]  (no affine: w = 1, b = 0)
// y = (x - mean) / sqrt(var + eps) * w + b, mean and (biased) var over the trailing dims that
// the weight's shape names. The weight's shape must equal those trailing dims of x (no
// broadcasting: [S] for [B, S, D] is an error), the bias's shape must equal the weight's, and
// all three have the same float dtype (f32 or f64). PyTorch: F.layer_norm(x, w.shape, w, b, eps).
// Attrs: i[0] = number of normalised trailing dims, f[0] = eps.
// Gradient: layer_norm_backward(x, w or none, g) for dx (see below); dw and db from forward ops.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::layer_norm> {
  // Inputs: x, or x, w, b.
  static constexpr OpInfo info{"layer_norm", "layer_norm", -1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// dx of layer_norm. Inputs: x, g (no affine) or x, w, g. It needs the forward *input* x, not
// its output: the kernel recomputes mean and rstd from x in double (the forward saves nothing),
// so it is exact even where y has lost precision. Attrs as layer_norm's.
template <>
struct OpDef<OpId::layer_norm_backward> {
  static constexpr OpInfo info{"layer_norm_backward", "dlayer_norm", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

namespace rules {
// True when w's shape is the last w.rank dims of x (and w has at least one dim).
constexpr bool trailing_dims(const ShapeV& x, const ShapeV& w) {
  if (w.rank < 1 || w.rank > x.rank) return false;
  for (int k = 1; k <= w.rank; ++k)
    if (!(w.dims[w.rank - k] == x.dims[x.rank - k])) return false;
  return true;
}
constexpr bool norm_dtype(DType t) {
  return t == DType::f32 || t == DType::f64;
}

// Plain (no-affine) normalisation over the last k dims.
constexpr ShapeResult norm_plain(const ShapeV& x, DType t, int k) {
  if (!norm_dtype(t)) return shape_fail(ShapeErr::dtype);
  if (k < 1 || k > x.rank) return shape_fail(ShapeErr::rank);
  return shape_ok(x, t);
}
constexpr ShapeResult norm_weight(const ShapeV& x, DType t, const ShapeV& w, DType tw) {
  if (!norm_dtype(t) || tw != t) return shape_fail(ShapeErr::dtype);
  if (!trailing_dims(x, w)) return shape_fail(ShapeErr::norm_dims);
  return shape_ok(x, t);
}
constexpr ShapeResult layer_norm(const ShapeV& x, DType t, const ShapeV& w, DType tw,
                                 const ShapeV& b, DType tb) {
  const ShapeResult r = norm_weight(x, t, w, tw);
  if (!r.ok()) return r;
  if (tb != t) return shape_fail(ShapeErr::dtype);
  if (!(b == w)) return shape_fail(ShapeErr::shape_mismatch);
  return r;
}
}  // namespace rules

namespace detail {
constexpr Attrs norm_attrs(int k, double eps) {
  // NOTE: eps sits inside the square root, 1 / sqrt(var + eps), as in PyTorch and oneDNN. A
  // negative eps could make var + eps negative (NaN), so it stops graph building.
  if (!(eps >= 0)) throw GraphError("stag: norm eps must be >= 0 (it is added to the variance)");
  Attrs a;
  a.i[0] = k;
  a.f[0] = eps;
  return a;
}
}  // namespace detail

constexpr Ref layer_norm(Ref x, Ref w, Ref b, double eps = 1e-5) {
  const Attrs a = detail::norm_attrs(w.rank(), eps);
  return emit(OpId::layer_norm, "layer_norm", {x, w, b},
              rules::layer_norm(x.shape(), x.dtype(), w.shape(), w.dtype(), b.shape(), b.dtype()),
              &a);
}
// No affine: normalises over the last `k` dims of x.
constexpr Ref layer_norm(Ref x, int k, double eps = 1e-5) {
  const Attrs a = detail::norm_attrs(k, eps);
  return emit(OpId::layer_norm, "layer_norm", {x}, rules::norm_plain(x.shape(), x.dtype(), k), &a);
}
// `w` may be an invalid Ref (no affine): the inputs are then x, g.
constexpr Ref layer_norm_backward(Ref x, Ref w, Ref g, int k, double eps) {
  const Attrs a = detail::norm_attrs(k, eps);
  const ShapeResult r = shape_ok(x.shape(), x.dtype());
  return w.valid() ? emit(OpId::layer_norm_backward, "layer_norm_backward", {x, w, g}, r, &a)
                   : emit(OpId::layer_norm_backward, "layer_norm_backward", {x, g}, r, &a);
}

template <class SX, DType TX, class SW, DType TW, class SB, DType TB>
constexpr auto layer_norm(Tensor<SX, TX> x, Tensor<SW, TW> w, Tensor<SB, TB> b, double eps = 1e-5) {
  constexpr ShapeResult r = rules::layer_norm(SX::value, TX, SW::value, TW, SB::value, TB);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::layer_norm: x, weight and bias must all be f32 or all be f64", SX, SW);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::norm_dims,
      "stag::layer_norm: the weight's shape must equal the trailing dims of x (x [B, S, D] "
      "takes a weight [D] or [S, D]); fix the weight's shape or permute x",
      SX, SW);
  STAG_SHAPE_CHECK(r.err != ShapeErr::shape_mismatch,
                   "stag::layer_norm: the bias's shape must equal the weight's shape", SW, SB);
  if constexpr (r.ok())
    return Tensor<SX, TX>{x.b, layer_norm(x.ref(), w.ref(), b.ref(), eps).id};
  else
    return x;
}

// No affine, over the last K dims: layer_norm(x) or layer_norm<2>(x, 1e-6).
template <int K = 1, class S, DType T>
constexpr auto layer_norm(Tensor<S, T> x, double eps = 1e-5) {
  constexpr ShapeResult r = rules::norm_plain(S::value, T, K);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::layer_norm: x must be f32 or f64", S);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::layer_norm: the number of normalised dims must be between 1 and x's rank",
                   S);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, layer_norm(x.ref(), K, eps).id};
  else
    return x;
}

}  // namespace stag

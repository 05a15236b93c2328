// rms_norm: scale by the reciprocal root mean square over the trailing dims (LLaMA, minimind).
//   rms_norm(x [B, S, D], w [D], eps = 1e-6) -> [B, S, D]
//   rms_norm<1>(x [B, S, D], eps = 1e-6)     -> [B, S, D]  (no weight: w = 1)
// y = x * rsqrt(mean(x^2) + eps) * w, the mean over the trailing dims the weight's shape names.
// The weight's shape must equal those trailing dims of x, with the same float dtype (f32 or
// f64); there is no bias and no mean subtraction. PyTorch: torch.nn.RMSNorm(w.shape, eps)
// (PyTorch >= 2.4), or minimind's RMSNorm: w * x * torch.rsqrt(x.pow(2).mean(-1, True) + eps).
// Attrs: i[0] = number of normalised trailing dims, f[0] = eps.
// Gradient: rms_norm_backward(x, w or none, g) for dx; dw = sum_to(g * rms_norm(x), w.shape).
#pragma once

#include <stag/ops/layer_norm/layer_norm.hpp>

namespace stag {

template <>
struct OpDef<OpId::rms_norm> {
  // Inputs: x, or x, w.
  static constexpr OpInfo info{"rms_norm", "rms_norm", -1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// dx of rms_norm. Inputs: x, g (no weight) or x, w, g. Like layer_norm_backward it needs the
// forward input x and recomputes rstd from it in double. Attrs as rms_norm's.
template <>
struct OpDef<OpId::rms_norm_backward> {
  static constexpr OpInfo info{"rms_norm_backward", "drms_norm", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// The rules are the norms' shared ones (ops/layer_norm): rules::norm_weight, rules::norm_plain.

constexpr Ref rms_norm(Ref x, Ref w, double eps = 1e-6) {
  const Attrs a = detail::norm_attrs(w.rank(), eps);
  return emit(OpId::rms_norm, "rms_norm", {x, w},
              rules::norm_weight(x.shape(), x.dtype(), w.shape(), w.dtype()), &a);
}
// No weight: normalises over the last `k` dims of x.
constexpr Ref rms_norm(Ref x, int k, double eps = 1e-6) {
  const Attrs a = detail::norm_attrs(k, eps);
  return emit(OpId::rms_norm, "rms_norm", {x}, rules::norm_plain(x.shape(), x.dtype(), k), &a);
}
// `w` may be an invalid Ref (no weight): the inputs are then x, g.
constexpr Ref rms_norm_backward(Ref x, Ref w, Ref g, int k, double eps) {
  const Attrs a = detail::norm_attrs(k, eps);
  const ShapeResult r = shape_ok(x.shape(), x.dtype());
  return w.valid() ? emit(OpId::rms_norm_backward, "rms_norm_backward", {x, w, g}, r, &a)
                   : emit(OpId::rms_norm_backward, "rms_norm_backward", {x, g}, r, &a);
}

template <class SX, DType TX, class SW, DType TW>
constexpr auto rms_norm(Tensor<SX, TX> x, Tensor<SW, TW> w, double eps = 1e-6) {
  constexpr ShapeResult r = rules::norm_weight(SX::value, TX, SW::value, TW);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::rms_norm: x and weight must both be f32 or both be f64", SX, SW);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::norm_dims,
      "stag::rms_norm: the weight's shape must equal the trailing dims of x (x [B, S, D] "
      "takes a weight [D] or [S, D]); fix the weight's shape or permute x",
      SX, SW);
  if constexpr (r.ok())
    return Tensor<SX, TX>{x.b, rms_norm(x.ref(), w.ref(), eps).id};
  else
    return x;
}

// No weight, over the last K dims: rms_norm(x) or rms_norm<2>(x, 1e-5).
template <int K = 1, class S, DType T>
constexpr auto rms_norm(Tensor<S, T> x, double eps = 1e-6) {
  constexpr ShapeResult r = rules::norm_plain(S::value, T, K);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::rms_norm: x must be f32 or f64", S);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::rms_norm: the number of normalised dims must be between 1 and x's rank",
                   S);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, rms_norm(x.ref(), K, eps).id};
  else
    return x;
}

}  // namespace stag

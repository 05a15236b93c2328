// rope: rotary position embedding on x [..., S, Dh] (the sequence is the second-to-last dim,
// Dh is even), "rotate half" pairing as in GPT-NeoX, LLaMA and minimind: for i < Dh/2 the pair
// (x[i], x[i + Dh/2]) at position p = s + offset is rotated by the angle p * theta^(-2i/Dh):
//   y[i] = x[i] cos - x[i + Dh/2] sin,   y[i + Dh/2] = x[i + Dh/2] cos + x[i] sin.
//   rope(q [B, H, S, 64]) -> [B, H, S, 64];  rope(q, {.theta = 1e6, .offset = 128})
// Apply it to q and k after the head split and transpose ([B, H, S, Dh]; minimind applies it on
// [B, S, H, Dh], whose positions run along dim 1: transpose first). theta: the base (10000 by
// default; minimind uses 1e6); offset: the position of the first row (decoding with a cache).
// PyTorch: q * cos + rotate_half(q) * sin with the usual cos/sin tables.
// Attrs: f[0] = theta, i[0] = position offset, i[1] = inverse flag (rotate by -angle).
// Gradient: the rotation is orthogonal, so dx is rope with the inverse rotation applied to g.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::rope> {
  static constexpr OpInfo info{"rope", "rope", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

struct RopeOpts {
  double theta = 10000.0;   // the frequency base
  std::int64_t offset = 0;  // the position of the first row along S
};

namespace rules {
constexpr ShapeResult rope(const ShapeV& x, DType t) {
  if (t != DType::f32 && t != DType::f64) return shape_fail(ShapeErr::dtype);
  if (x.rank < 2) return shape_fail(ShapeErr::rank);
  const DimV& dh = x.dims[x.rank - 1];
  // A symbolic head dim is checked by the kernel once bound.
  if (dh.is_static() && dh.coef % 2 != 0) return shape_fail(ShapeErr::odd_dim);
  return shape_ok(x, t);
}
}  // namespace rules

constexpr Ref rope(Ref x, double theta, std::int64_t offset, bool inverse = false) {
  // NOTE: written as !(theta > 0) so that a NaN theta is refused too.
  if (!(theta > 0.0)) throw GraphError("stag::rope: theta (the frequency base) must be > 0");
  Attrs a;
  a.f[0] = theta;
  a.i[0] = offset;
  a.i[1] = inverse ? 1 : 0;
  return emit(OpId::rope, "rope", {x}, rules::rope(x.shape(), x.dtype()), &a);
}

template <class S, DType T>
constexpr auto rope(Tensor<S, T> x, RopeOpts opts = {}) {
  constexpr ShapeResult r = rules::rope(S::value, T);
  static_assert(r.err != ShapeErr::dtype, "stag::rope: input must be floating point (f32 or f64)");
  static_assert(r.err != ShapeErr::rank,
                "stag::rope: input must be [..., S, Dh] (at least 2 dims: sequence, head dim)");
  static_assert(r.err != ShapeErr::odd_dim,
                "stag::rope: the last dim (head dim Dh) must be even: rope rotates pairs "
                "(i, i + Dh/2)");
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, rope(x.ref(), opts.theta, opts.offset).id};
  else
    return x;
}

}  // namespace stag

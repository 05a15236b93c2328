// rope: rotary position embedding on x [..., S, Dh] (the sequence is the second-to-last dim,
// Dh is even), "rotate half" pairing as in GPT-NeoX, LLaMA and minimind: for i < Dh/2 the pair
// (x[i], x[i + Dh/2]) at position p = s + offset is rotated by the angle p * theta^(-2i/Dh):
//   y[i] = x[i] cos - x[i + Dh/2] sin,   y[i + Dh/2] = x[i + Dh/2] cos + x[i] sin.
//   rope(q [B, H, S, 64]) -> [B, H, S, 64];  rope(q, {.theta = 1e6, .offset = 128})
//   rope(q [B, H, S, 64], positions [S] i32) -> [B, H, S, 64]   (row s at positions[s] + offset)
//   rope(q [B, H, S, 64], positions [B, S] i32) -> [B, H, S, 64]   (row s of batch row b at
//                                                                    positions[b, s] + offset)
// The second form reads the positions at run time (decoding with a KV cache, where the position
// of the new token is an input, not a constant of the graph); positions are i32 or i64, one per
// row along S, shared by the leading dims ([S]) or one set per batch row ([B, S], for batches
// whose rows are at different positions), any integer (negative too).
// Apply it to q and k after the head split and transpose ([B, H, S, Dh]; minimind applies it on
// [B, S, H, Dh], whose positions run along dim 1: transpose first). A static second-to-last
// axis after a symbolic one ([B, S, H, Dh]) or a merged [B * S, Dh] is refused at compile time.
// theta: the base (10000 by default; minimind uses 1e6); offset: the position of the first row
// (decoding with a cache). PyTorch: q * cos + rotate_half(q) * sin with the usual cos/sin tables.
// Attrs: f[0] = theta, i[0] = position offset, i[1] = inverse flag (rotate by -angle).
// Gradient: the rotation is orthogonal, so dx is rope with the inverse rotation applied to g
// (at the same positions); the positions get none.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::rope> {
  static constexpr OpInfo info{"rope", "rope", -1, 0b10};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

struct RopeOpts {
  double theta = 10000.0;   // the frequency base
  std::int64_t offset = 0;  // the position of the first row along S
};

namespace rules {
// The axis rope rotates along (the second-to-last) looks like a sequence: not a merged product
// of symbols ([batch * seq, Dh] would number the rows across the batch), and not static while a
// symbolic axis sits between the first axis and it ([B, S, H, Dh]: the axis is the heads). The
// first axis may be a symbolic batch over static heads ([B, H, 1, Dh] when decoding). Fully
// static shapes cannot be told apart and pass.
constexpr bool rope_along_sequence(const ShapeV& x) {
  const DimV& s = x.dims[x.rank - 2];
  if (s.nsym > 1) return false;
  if (!s.is_static()) return true;
  for (int i = 1; i < x.rank - 2; ++i)
    if (!x.dims[i].is_static()) return false;
  return true;
}
constexpr ShapeResult rope(const ShapeV& x, DType t) {
  if (t != DType::f32 && t != DType::f64) return shape_fail(ShapeErr::dtype);
  if (x.rank < 2) return shape_fail(ShapeErr::rank);
  const DimV& dh = x.dims[x.rank - 1];
  // A symbolic head dim is checked by the kernel once bound.
  if (dh.is_static() && dh.coef % 2 != 0) return shape_fail(ShapeErr::odd_dim);
  return shape_ok(x, t);
}
// With a positions input p [S] or [B, S]: integer, one position per row of x's second-to-last
// dim (per batch row: B is x's first dim, and x has at least 3 dims).
// The typed front-ends' rule: rope's, and the axis must look like a sequence. (The Ref forms,
// the vjp's and the escape hatch's, check only rope's.)
constexpr ShapeResult rope_along_seq(const ShapeV& x, DType t) {
  const ShapeResult r = rope(x, t);
  if (r.ok() && !rope_along_sequence(x)) return shape_fail(ShapeErr::seq_axis);
  return r;
}
constexpr ShapeResult rope_at(const ShapeV& x, DType t, const ShapeV& p, DType tp,
                              bool check_axis = false) {
  const ShapeResult r = check_axis ? rope_along_seq(x, t) : rope(x, t);
  if (!r.ok()) return r;
  if (!is_integer(tp)) return shape_fail(ShapeErr::index_dtype);
  const bool shared = p.rank == 1 && p.dims[0] == x.dims[x.rank - 2];
  const bool per_row =
      p.rank == 2 && x.rank >= 3 && p.dims[0] == x.dims[0] && p.dims[1] == x.dims[x.rank - 2];
  if (!shared && !per_row) return shape_fail(ShapeErr::shape_mismatch);
  return r;
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

constexpr Ref rope(Ref x, Ref positions, double theta, std::int64_t offset, bool inverse = false) {
  if (!(theta > 0.0)) throw GraphError("stag::rope: theta (the frequency base) must be > 0");
  Attrs a;
  a.f[0] = theta;
  a.i[0] = offset;
  a.i[1] = inverse ? 1 : 0;
  return emit(OpId::rope, "rope", {x, positions},
              rules::rope_at(x.shape(), x.dtype(), positions.shape(), positions.dtype()), &a);
}

namespace detail {
template <ShapeResult R, class S>
constexpr void rope_checks() {
  STAG_SHAPE_CHECK(R.err != ShapeErr::dtype,
                   "stag::rope: input must be floating point (f32 or f64)", S);
  STAG_SHAPE_CHECK(R.err != ShapeErr::rank,
                   "stag::rope: input must be [..., S, Dh] (at least 2 dims: sequence, head dim)",
                   S);
  STAG_SHAPE_CHECK(R.err != ShapeErr::odd_dim,
                   "stag::rope: the last dim (head dim Dh) must be even: rope rotates pairs "
                   "(i, i + Dh/2)",
                   S);
  constexpr bool merged = S::rank >= 2 && S::value.dims[S::rank >= 2 ? S::rank - 2 : 0].nsym > 1;
  STAG_SHAPE_CHECK(R.err != ShapeErr::seq_axis || merged,
                   "stag::rope: rope rotates along the second-to-last axis, the sequence, but it "
                   "is static after a symbolic axis: the heads of the [B, S, H, Dh] layout "
                   "(transpose<1, 2> to [B, H, S, Dh] first)",
                   S);
  STAG_SHAPE_CHECK(R.err != ShapeErr::seq_axis || !merged,
                   "stag::rope: rope rotates along the second-to-last axis, the sequence, but it "
                   "is a merged product (rows numbered across the batch); rotate before merging",
                   S);
}
}  // namespace detail

template <class S, DType T>
constexpr auto rope(Tensor<S, T> x, RopeOpts opts = {}) {
  constexpr ShapeResult r = rules::rope_along_seq(S::value, T);
  detail::rope_checks<r, S>();
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, rope(x.ref(), opts.theta, opts.offset).id};
  else
    return x;
}

// Rotary positions read at run time: row s of x is at position positions[s] + opts.offset.
template <class S, DType T, class SP, DType TP>
constexpr auto rope(Tensor<S, T> x, Tensor<SP, TP> positions, RopeOpts opts = {}) {
  constexpr ShapeResult r = rules::rope_at(S::value, T, SP::value, TP, true);
  detail::rope_checks<r, S>();
  STAG_SHAPE_CHECK(r.err != ShapeErr::index_dtype, "stag::rope: positions must be i32 or i64", S,
                   SP);
  STAG_SHAPE_CHECK(r.err != ShapeErr::shape_mismatch,
                   "stag::rope: positions must be [S], one per row of the input's second-to-last "
                   "dim, or [B, S], one set per batch row (input, positions)",
                   S, SP);
  if constexpr (r.ok())
    return Tensor<S, T>{x.b, rope(x.ref(), positions.ref(), opts.theta, opts.offset).id};
  else
    return x;
}

}  // namespace stag

// View ops (no data movement when the input is contiguous): reshape/view, unsqueeze, squeeze.
//   view<batch, seq, 8, 64>(x [batch, seq, 512]) -> [batch, seq, 8, 64]
//   view<batch * seq, 512>(x [batch, seq, 512])  -> [batch*seq, 512]
//   unsqueeze<1>(mask [batch, seq]) -> [batch, 1, seq];  squeeze<1>(x [B, 1, S]) -> [B, S]
// view requires equal element counts as monomials (static factors and the same symbols) and is
// a sequence of splits and merges of adjacent axes, in order (graph/algebra.hpp, reshape), so
// [B,S,512] -> [S,512], [B,S,D] -> [S,B,D] and [B,H,S,Dh] -> [B,S,H*Dh] do not compile.
// PyTorch: x.view(...), x.unsqueeze(d), x.squeeze(d).
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::reshape> {
  static constexpr OpInfo info{"reshape", "view", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::unsqueeze> {
  static constexpr OpInfo info{"unsqueeze", "unsqueeze", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::squeeze> {
  static constexpr OpInfo info{"squeeze", "squeeze", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};

constexpr Ref reshape(Ref x, const ShapeV& target) {
  if (identical(x.shape(), target)) return x;
  return emit(OpId::reshape, "view", {x}, algebra::reshape(x.shape(), target, x.dtype()));
}

// NOTE: when a check fails, view (like expand and squeeze) returns a placeholder constant of
// the shape asked for, so that the user's later lines neither fail their own checks nor throw
// during graph building: one mistake, one error. The graph is never used.
template <auto... Ds, class S, DType T>
constexpr auto view(Tensor<S, T> x) {
  using Target = canonical_t<Shape<Ds...>>;
  constexpr ShapeResult r = algebra::reshape(S::value, Target::value, T);
  constexpr algebra::ViewHint h =
      r.ok() ? algebra::ViewHint{} : algebra::view_hint(S::value, Target::value);
  using H = show::hint<h.kind, h.i, h.j>;
  STAG_SHAPE_CHECK(r.err != ShapeErr::numel,
                   "stag::view: the element counts differ (input shape, target shape)", S, Target);
  STAG_SHAPE_CHECK(r.err != ShapeErr::symbols,
                   "stag::view: the target drops or adds a symbolic dim (each symbol must be kept)",
                   S, Target);
  STAG_SHAPE_CHECK(r.err != ShapeErr::order,
                   "stag::view: the target moves an axis past another (a view only splits an axis "
                   "or merges adjacent axes, in order)",
                   S, Target, H);
  STAG_SHAPE_CHECK(r.err != ShapeErr::regroup,
                   "stag::view: adjacent axes are regrouped into others (a view only splits one "
                   "axis or merges adjacent axes)",
                   S, Target, H);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dim_names,
                   "stag::view: the split or merge does not follow the named dims in order", S,
                   Target, H);
  STAG_SHAPE_CHECK(r.err != ShapeErr::factor_order,
                   "stag::view: the split or merge reorders a product's symbolic factors (a "
                   "product is in layout order: batch * seq splits only into [batch, seq])",
                   S, Target, H);
  register_syms<Target>(*x.b);
  if constexpr (r.ok())
    return Tensor<Target, T>{x.b, reshape(x.ref(), Target::value).id};
  else
    return Tensor<Target, T>{x.b, full(*x.b, Target::value, 0, T).id};  // NOTE: see above
}

constexpr Ref unsqueeze(Ref x, int axis) {
  const ShapeResult r = algebra::unsqueeze(x.shape(), axis, x.dtype());
  Attrs a;
  a.i[0] = axis;
  return emit(OpId::unsqueeze, "unsqueeze", {x}, r, &a);
}
constexpr Ref squeeze(Ref x, int axis) {
  const ShapeResult r = algebra::squeeze(x.shape(), axis, x.dtype());
  Attrs a;
  a.i[0] = axis;
  return emit(OpId::squeeze, "squeeze", {x}, r, &a);
}

template <int Axis, class S, DType T>
constexpr auto unsqueeze(Tensor<S, T> x) {
  constexpr ShapeResult r = algebra::unsqueeze(S::value, Axis, T);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis,
                   "stag::unsqueeze: axis out of range (valid: -rank-1 .. rank)", S, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::unsqueeze: the result would have more than 6 dims", S, void);
  if constexpr (r.ok())
    return typed<r.shape, T, S>(unsqueeze(x.ref(), Axis));
  else
    return x;
}
template <int Axis, class S, DType T>
constexpr auto squeeze(Tensor<S, T> x) {
  constexpr ShapeResult r = algebra::squeeze(S::value, Axis, T);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::squeeze: axis out of range", S, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::not_one,
                   "stag::squeeze: the squeezed dim is not 1; check the axis (a longer dim must be "
                   "reduced, e.g. with sum or max)",
                   S, void);
  if constexpr (r.ok()) {
    return typed<r.shape, T, S>(squeeze(x.ref(), Axis));
  } else if constexpr (r.err == ShapeErr::not_one) {
    // NOTE: see view: a placeholder of the shape asked for (the dim dropped).
    constexpr ShapeV dropped = [] {
      ShapeV s = S::value;
      s.dims[normalize_axis(Axis, s.rank)] = static_dim(1);
      return algebra::squeeze(s, Axis).shape;
    }();
    return typed<dropped, T, S>(full(*x.b, dropped, 0, T));
  } else {
    return x;
  }
}

}  // namespace stag

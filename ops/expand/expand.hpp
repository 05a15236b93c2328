// expand (broadcast_to): repeat size-1 dims (and add leading dims) without copying.
//   expand<batch, heads, seq, seq>(mask [batch, 1, 1, seq]) -> [batch, heads, seq, seq]
// Each input dim must equal the target's or be 1 (numpy rules). PyTorch: x.expand(...).
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::expand> {
  static constexpr OpInfo info{"expand", "expand", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

constexpr Ref expand(Ref x, const ShapeV& target) {
  if (identical(x.shape(), target)) return x;
  return emit(OpId::expand, "expand", {x}, algebra::expand(x.shape(), target, x.dtype()));
}

template <auto... Ds, class S, DType T>
constexpr auto expand(Tensor<S, T> x) {
  using Target = canonical_t<Shape<Ds...>>;
  constexpr ShapeResult r = algebra::expand(S::value, Target::value, T);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::expand: the target has fewer dims than the input", S, Target);
  STAG_SHAPE_CHECK(r.err != ShapeErr::expand,
                   "stag::expand: each input dim must equal the target dim or be 1", S, Target);
  register_syms<Target>(*x.b);
  if constexpr (r.ok())
    return Tensor<Target, T>{x.b, expand(x.ref(), Target::value).id};
  else
    return Tensor<Target, T>{x.b, full(*x.b, Target::value, 0, T).id};  // NOTE: see view
}

}  // namespace stag

// Mask sources, as graph nodes (true = keep, the convention of softmax's mask):
//   causal_mask<Sq, Sk>(g) -> [Sq, Sk] bool, keep[q, k] = k <= q + (Sk - Sq)
//   causal_mask<S>(g) -> [S, S] bool, lower triangular (k <= q)
//   padding_mask<S>(lengths [B] i32 or i64) -> [B, S] bool, keep[b, s] = s < lengths[b]
// With Sq < Sk the query block sits at the end of the key sequence (decoding with a KV cache:
// query q is position q + Sk - Sq); with Sq > Sk the first Sq - Sk rows keep nothing, and
// softmax turns such rows into zeros, not NaN. Sq, Sk and S are ints or symbols. lengths must
// lie in [0, S]; the kernel throws stag::Error naming the node, the batch index and the value.
// Masks combine with & and |: causal_mask<seq>(g) & unsqueeze<1>(padding_mask<seq>(len)).
// PyTorch: torch.ones(Sq, Sk).tril(Sk - Sq).bool(); arange(S)[None, :] < lengths[:, None].
// No attrs; no gradient (bool outputs).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::causal_mask> {
  static constexpr OpInfo info{"causal_mask", "causal", 0};
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::padding_mask> {
  static constexpr OpInfo info{"padding_mask", "padding", 1, 0b1};
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult padding_mask(const ShapeV& lengths, DType t, const DimV& s) {
  if (!is_integer(t)) return shape_fail(ShapeErr::dtype);
  if (lengths.rank != 1) return shape_fail(ShapeErr::rank);
  return shape_ok(make_shape({lengths.dims[0], s}), DType::boolean);
}
}  // namespace rules

constexpr Ref causal_mask(Builder& g, const DimV& sq, const DimV& sk) {
  return Ref{&g, g.add(code(OpId::causal_mask), {}, make_shape({sq, sk}), DType::boolean, nullptr,
                       "causal_mask")};
}
constexpr Ref padding_mask(Ref lengths, const DimV& s) {
  return emit(OpId::padding_mask, "padding_mask", {lengths},
              rules::padding_mask(lengths.shape(), lengths.dtype(), s));
}

template <auto Sq, auto Sk>
constexpr auto causal_mask(Builder& g) {
  using C = canonical_t<Shape<Sq, Sk>>;
  register_syms<C>(g);
  return Tensor<C, DType::boolean>{&g, causal_mask(g, C::value.dims[0], C::value.dims[1]).id};
}
template <auto S>
constexpr auto causal_mask(Builder& g) {
  return causal_mask<S, S>(g);
}

template <auto S, class SL, DType TL>
constexpr auto padding_mask(Tensor<SL, TL> lengths) {
  using C = canonical_t<Shape<S>>;
  constexpr ShapeResult r = rules::padding_mask(SL::value, TL, C::value.dims[0]);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::padding_mask: lengths must be i32 or i64", SL);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::padding_mask: lengths must be a [batch] vector (one length per sequence)",
                   SL);
  register_syms<C>(*lengths.b);
  if constexpr (r.ok())
    return typed<r.shape, DType::boolean, SL, C>(padding_mask(lengths.ref(), C::value.dims[0]));
  else
    return Tensor<SL, DType::boolean>{lengths.b, lengths.id};
}

}  // namespace stag

// matmul: batched matrix product with numpy broadcasting of the batch dims.
//   matmul(a [..., M, K], b [..., K, N]) -> [..., M, N]
//   matmul_nt(q [B, H, S, D], k [B, H, T, D]) -> [B, H, S, T]   (q @ k^T, no copy of k)
// Both operands have rank >= 2 and the same dtype; batch dims broadcast from the right.
// bf16 operands accumulate in f32 and give a bf16 product; the untyped matmul(a, b, ta, tb, f32)
// (what the autocast pass, autodiff/autocast.hpp, emits) keeps the f32 product unrounded.
// PyTorch: torch.matmul(a, b); matmul_nt(a, b) is a @ b.transpose(-2, -1); bf16 operands as
// under torch.autocast (a bf16 product), or out_dtype=float32 for the f32 one.
// Attrs: i[0] = a is transposed (last two dims), i[1] = b is transposed.
#pragma once

#include <optional>

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::matmul> {
  static constexpr OpInfo info{"matmul", "@", 2};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);  // oneDNN matmul
  static constexpr std::uint8_t cpu_strided = 0b11;       // reads permuted operands in place
};

namespace rules {
// `out`: the product's dtype; the operands' by default, f32 allowed for bf16 operands.
constexpr ShapeResult matmul(const ShapeV& a, DType ta, const ShapeV& b, DType tb, bool trans_a,
                             bool trans_b, std::optional<DType> out = std::nullopt) {
  if (ta != tb || !is_float(ta)) return shape_fail(ShapeErr::dtype);
  if (out && *out != ta && !(ta == DType::bf16 && *out == DType::f32))
    return shape_fail(ShapeErr::dtype);
  if (a.rank < 2 || b.rank < 2) return shape_fail(ShapeErr::rank);
  const DimV m = a.dims[a.rank - (trans_a ? 1 : 2)];
  const DimV ka = a.dims[a.rank - (trans_a ? 2 : 1)];
  const DimV kb = b.dims[b.rank - (trans_b ? 1 : 2)];
  const DimV n = b.dims[b.rank - (trans_b ? 2 : 1)];
  if (!(ka == kb)) return shape_fail(ShapeErr::inner_dim);
  ShapeV ba = a, bb = b;
  ba.rank = static_cast<std::uint8_t>(a.rank - 2);
  bb.rank = static_cast<std::uint8_t>(b.rank - 2);
  ShapeResult r = algebra::broadcast(ba, bb, ta);
  if (!r.ok()) return shape_fail(ShapeErr::batch_dims);
  r.shape.dims[r.shape.rank++] = m;
  r.shape.dims[r.shape.rank++] = n;
  if (out) r.dtype = *out;
  return r;
}
}  // namespace rules

constexpr Ref matmul(Ref a, Ref b, bool trans_a = false, bool trans_b = false,
                     std::optional<DType> out = std::nullopt) {
  Attrs at;
  at.i[0] = trans_a;
  at.i[1] = trans_b;
  return emit(OpId::matmul, "matmul", {a, b},
              rules::matmul(a.shape(), a.dtype(), b.shape(), b.dtype(), trans_a, trans_b, out),
              &at);
}

namespace detail {
// The shape type with its last two dims swapped (how matmul_nt sees its second operand).
template <class S>
struct transposed;
template <auto... Ds>
struct transposed<Shape<Ds...>> {
  static constexpr ShapeV value = [] {
    ShapeV v = Shape<Ds...>::value;
    if (v.rank >= 2) {
      const DimV t = v.dims[v.rank - 1];
      v.dims[v.rank - 1] = v.dims[v.rank - 2];
      v.dims[v.rank - 2] = t;
    }
    return v;
  }();
  using type = shape_t<value, syms_of_t<Shape<Ds...>>>;
};
template <class S>
using transposed_t = typename transposed<S>::type;

template <bool TA, bool TB, class SA, DType DA, class SB, DType DB>
constexpr auto matmul_typed(Tensor<SA, DA> a, Tensor<SB, DB> b) {
  constexpr ShapeResult r = rules::matmul(SA::value, DA, SB::value, DB, TA, TB);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::matmul: operands must be floating point tensors of the same dtype",
                   with_dtype<SA, DA>, with_dtype<SB, DB>);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank, "stag::matmul: both operands need at least 2 dims", SA,
                   SB);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::inner_dim,
      "stag::matmul: inner dimensions differ: A is [..., M, K] and B must be [..., K, N]", SA,
      std::conditional_t<TB, transposed_t<SB>, SB>);
  STAG_SHAPE_CHECK(r.err != ShapeErr::batch_dims,
                   "stag::matmul: batch dimensions (all but the last two) are not broadcastable",
                   SA, SB);
  if constexpr (r.ok())
    return typed<r.shape, DA, SA, SB>(matmul(a.ref(), b.ref(), TA, TB));
  else
    return a;
}
}  // namespace detail

template <class SA, DType DA, class SB, DType DB>
constexpr auto matmul(Tensor<SA, DA> a, Tensor<SB, DB> b) {
  return detail::matmul_typed<false, false>(a, b);
}
// a @ b^T without materialising the transpose (attention scores q @ k^T).
template <class SA, DType DA, class SB, DType DB>
constexpr auto matmul_nt(Tensor<SA, DA> a, Tensor<SB, DB> b) {
  return detail::matmul_typed<false, true>(a, b);
}
// a^T @ b.
template <class SA, DType DA, class SB, DType DB>
constexpr auto matmul_tn(Tensor<SA, DA> a, Tensor<SB, DB> b) {
  return detail::matmul_typed<true, false>(a, b);
}

}  // namespace stag

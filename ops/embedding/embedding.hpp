// embedding: look up one row of a table per integer id.
//   embedding(ids [B, S] i32|i64, table [V, D]) -> [B, S, D]
//   embedding(id [] i32, table [V, D])           -> [D]
// ids may have any rank up to 5 and must be i32 or i64; the table is a [V, D] f32, f64 or bf16
// tensor (usually a parameter) and gives the output its dtype. A bf16 table (weights stored in
// bf16 for inference, stag::bf16_weights) has no gradient. An id outside [0, V) is a
// run-time stag::Error naming the node, the id's position and V (PyTorch raises an index error
// on CPU and asserts on CUDA). No broadcasting. PyTorch: F.embedding(ids, table). No attrs.
// Gradient: none for ids (no_grad bit 0); the table's is embedding_backward(ids, g), a
// scatter-add into a [V, D] tensor of zeros (ids that repeat accumulate).
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::embedding> {
  static constexpr OpInfo info{"embedding", "embedding", 2, 0b01};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// dtable from ids [...] and the output gradient g [..., D]; the output shape is the table's
// [V, D] (V comes from the output, so a symbolic vocabulary works).
template <>
struct OpDef<OpId::embedding_backward> {
  static constexpr OpInfo info{"embedding_backward", "dembedding", 2, 0b01};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

namespace rules {
constexpr ShapeResult embedding(const ShapeV& ids, DType ti, const ShapeV& table, DType tt) {
  if (!is_integer(ti)) return shape_fail(ShapeErr::index_dtype);
  if (tt != DType::f32 && tt != DType::f64 && tt != DType::bf16) return shape_fail(ShapeErr::dtype);
  if (table.rank != 2 || ids.rank + 1 > kMaxRank) return shape_fail(ShapeErr::rank);
  ShapeV out = ids;
  out.dims[out.rank++] = table.dims[1];
  return shape_ok(out, tt);
}
}  // namespace rules

constexpr Ref embedding(Ref ids, Ref table) {
  return emit(OpId::embedding, "embedding", {ids, table},
              rules::embedding(ids.shape(), ids.dtype(), table.shape(), table.dtype()));
}
constexpr Ref embedding_backward(Ref ids, Ref g, const ShapeV& table) {
  return emit(OpId::embedding_backward, "embedding_backward", {ids, g}, shape_ok(table, g.dtype()));
}

template <class SI, DType TI, class ST, DType TT>
constexpr auto embedding(Tensor<SI, TI> ids, Tensor<ST, TT> table) {
  constexpr ShapeResult r = rules::embedding(SI::value, TI, ST::value, TT);
  STAG_SHAPE_CHECK(r.err != ShapeErr::index_dtype,
                   "stag::embedding: ids must be i32 or i64 (cast float ids with cast<i32>)", SI,
                   ST);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::embedding: the table must be f32, f64 or bf16",
                   SI, ST);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::embedding: the table must be [V, D] and ids may have at most 5 dims", SI,
                   ST);
  // After an error, a zero constant of the output's shape stands in for the lookup, so that one
  // mistake gives one error (not a second one from the next op's rank check).
  constexpr ShapeResult shape_only = rules::embedding(SI::value, DType::i32, ST::value, DType::f32);
  if constexpr (r.ok())
    return typed<r.shape, TT, SI, ST>(embedding(ids.ref(), table.ref()));
  else if constexpr (shape_only.ok())
    return typed<shape_only.shape, TT, SI, ST>(full(*table.b, shape_only.shape, 0.0, TT));
  else
    return Tensor<SI, TT>{table.b, table.id};
}

}  // namespace stag

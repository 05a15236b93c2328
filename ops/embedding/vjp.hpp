// Gradient of embedding: the table's gradient is a scatter-add of g's rows at the ids
// (embedding_backward); ids are integers and get none.
#pragma once

#include <stag/ops/embedding/embedding.hpp>

namespace stag {

constexpr void OpDef<OpId::embedding>::vjp(VjpCtx& c) {
  if (c.x(1).dtype() == DType::bf16)
    throw GraphError(
        "stag::embedding: a bf16 table has no gradient (weights stored in bf16 are for "
        "inference; train with f32 weights, or stag::autocast for bf16 matmuls)");
  c.grads[1] = embedding_backward(c.x(0), c.g(), c.x(1).shape());
}

}  // namespace stag

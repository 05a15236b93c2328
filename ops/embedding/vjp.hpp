// Gradient of embedding: the table's gradient is a scatter-add of g's rows at the ids
// (embedding_backward); ids are integers and get none.
#pragma once

#include <stag/ops/embedding/embedding.hpp>

namespace stag {

constexpr void OpDef<OpId::embedding>::vjp(VjpCtx& c) {
  c.grads[1] = embedding_backward(c.x(0), c.g(), c.x(1).shape());
}

}  // namespace stag

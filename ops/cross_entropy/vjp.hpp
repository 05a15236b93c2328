// Gradient of cross_entropy through the dedicated cross_entropy_backward op: one pass per row
// recomputing the softmax from the logits (numerically as stable as the forward pass).
#pragma once

#include <stag/ops/cross_entropy/cross_entropy.hpp>

namespace stag {

constexpr void OpDef<OpId::cross_entropy>::vjp(VjpCtx& c) {
  c.grads[0] = cross_entropy_backward(c.x(0), c.x(1), c.g(), c.attr());
}

}  // namespace stag

// Gradient of dropout: dx = g * mask / (1 - p) with the forward pass's mask, which the same
// dropout (same p, same salt, same element indices) regenerates from the RNG.
#pragma once

#include <stag/ops/dropout/dropout.hpp>

namespace stag {

constexpr void OpDef<OpId::dropout>::vjp(VjpCtx& c) {
  c.grads[0] = dropout(c.g(), c.attr().f[0], c.attr().i[0]);
}

}  // namespace stag

// Gradient of masked_fill: filled positions do not depend on x, so their gradient is zero;
// elsewhere the output is x and g passes through. The mask gets no gradient.
#pragma once

#include <stag/ops/masked_fill/masked_fill.hpp>

namespace stag {

constexpr void OpDef<OpId::masked_fill>::vjp(VjpCtx& c) {
  c.grads[0] = masked_fill(c.g(), c.x(1), 0.0);
}

}  // namespace stag

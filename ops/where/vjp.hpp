// Gradient of where: g routed to a where cond is true and to b where it is false (zeros
// elsewhere, selected with where itself), then summed back to each operand's shape.
#pragma once

#include <stag/ops/reduce/sum_to.hpp>
#include <stag/ops/where/where.hpp>

namespace stag {

constexpr void OpDef<OpId::where>::vjp(VjpCtx& c) {
  const Ref zero = scalar(*c.b, 0.0, c.g().dtype());
  c.grads[1] = sum_to(where(c.x(0), c.g(), zero), c.x(1).shape());
  c.grads[2] = sum_to(where(c.x(0), zero, c.g()), c.x(2).shape());
}

}  // namespace stag

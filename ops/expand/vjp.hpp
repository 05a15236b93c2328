// Gradient of expand: the output gradient summed back over the expanded dims.
#pragma once

#include <stag/ops/expand/expand.hpp>
#include <stag/ops/reduce/sum_to.hpp>

namespace stag {

constexpr void OpDef<OpId::expand>::vjp(VjpCtx& c) {
  c.grads[0] = sum_to(c.g(), c.x(0).shape());
}

}  // namespace stag

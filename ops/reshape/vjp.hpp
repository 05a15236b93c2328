// Gradients of the view ops: the output gradient viewed back to the input's shape.
#pragma once

#include <stag/ops/reshape/reshape.hpp>

namespace stag {

constexpr void OpDef<OpId::reshape>::vjp(VjpCtx& c) {
  c.grads[0] = reshape(c.g(), c.x(0).shape());
}
constexpr void OpDef<OpId::unsqueeze>::vjp(VjpCtx& c) {
  c.grads[0] = reshape(c.g(), c.x(0).shape());
}
constexpr void OpDef<OpId::squeeze>::vjp(VjpCtx& c) {
  c.grads[0] = reshape(c.g(), c.x(0).shape());
}

}  // namespace stag

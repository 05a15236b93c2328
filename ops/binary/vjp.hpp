// Gradients of add, sub, mul, div: the output gradient, scaled as the chain rule says, then
// summed over the dims each operand was broadcast along (sum_to).
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/reduce/sum_to.hpp>
#include <stag/ops/unary/unary.hpp>

namespace stag {

constexpr void OpDef<OpId::add>::vjp(VjpCtx& c) {
  c.grads[0] = sum_to(c.g(), c.x(0).shape());
  c.grads[1] = sum_to(c.g(), c.x(1).shape());
}
constexpr void OpDef<OpId::sub>::vjp(VjpCtx& c) {
  c.grads[0] = sum_to(c.g(), c.x(0).shape());
  c.grads[1] = neg(sum_to(c.g(), c.x(1).shape()));
}
// snippet-begin: docs-autodiff-3
constexpr void OpDef<OpId::mul>::vjp(VjpCtx& c) {
  c.grads[0] = sum_to(c.g() * c.x(1), c.x(0).shape());
  c.grads[1] = sum_to(c.g() * c.x(0), c.x(1).shape());
}
// y = a / b: da = g / b, db = -g * y / b.
constexpr void OpDef<OpId::div>::vjp(VjpCtx& c) {
  c.grads[0] = sum_to(c.g() / c.x(1), c.x(0).shape());
  c.grads[1] = neg(sum_to(c.g() * c.y() / c.x(1), c.x(1).shape()));
}
// snippet-end: docs-autodiff-3

}  // namespace stag

// Gradients of add, sub, mul, div: the output gradient, scaled as the chain rule says, then
// summed over the dims each operand was broadcast along (sum_to). minimum and maximum route g to
// the selected operand with a where (ties: all to the first operand).
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/compare/compare.hpp>
#include <stag/ops/constant/constant.hpp>
#include <stag/ops/reduce/sum_to.hpp>
#include <stag/ops/unary/unary.hpp>
#include <stag/ops/where/where.hpp>

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

namespace detail {
// g to a where `a_wins`, to b elsewhere, each summed back to its operand's shape.
constexpr void route_gradient(VjpCtx& c, Ref a_wins) {
  const Ref zero = scalar(*c.b, 0.0, c.g().dtype());
  c.grads[0] = sum_to(where(a_wins, c.g(), zero), c.x(0).shape());
  c.grads[1] = sum_to(where(a_wins, zero, c.g()), c.x(1).shape());
}
}  // namespace detail

constexpr void OpDef<OpId::minimum>::vjp(VjpCtx& c) {
  detail::route_gradient(c, le(c.x(0), c.x(1)));  // a <= b: a is selected (ties included)
}
constexpr void OpDef<OpId::maximum>::vjp(VjpCtx& c) {
  detail::route_gradient(c, le(c.x(1), c.x(0)));  // a >= b
}

}  // namespace stag

// Gradients of the unary ops: neg is -g, mod passes g through, floor passes nothing back (zero
// almost everywhere); every other op is one unary_backward node.
#pragma once

#include <stag/ops/unary/unary.hpp>

namespace stag {

constexpr void OpDef<OpId::neg>::vjp(VjpCtx& c) {
  c.grads[0] = neg(c.g());
}

#define STAG_UNARY_VJP(id)                                                      \
  constexpr void OpDef<OpId::id>::vjp(VjpCtx& c) {                              \
    c.grads[0] = unary_backward(OpId::id, c.x(0), c.y(), c.g(), c.attr().f[0]); \
  }
STAG_UNARY_VJP(exp)
STAG_UNARY_VJP(log)
STAG_UNARY_VJP(sqrt)
STAG_UNARY_VJP(rsqrt)
STAG_UNARY_VJP(pow_scalar)
STAG_UNARY_VJP(abs)
STAG_UNARY_VJP(relu)
STAG_UNARY_VJP(gelu)
STAG_UNARY_VJP(gelu_tanh)
STAG_UNARY_VJP(silu)
STAG_UNARY_VJP(sigmoid)
STAG_UNARY_VJP(tanh)
STAG_UNARY_VJP(sin)
STAG_UNARY_VJP(cos)
STAG_UNARY_VJP(elu)
#undef STAG_UNARY_VJP

constexpr void OpDef<OpId::clamp>::vjp(VjpCtx& c) {
  c.grads[0] = unary_backward(OpId::clamp, c.x(0), c.y(), c.g(), c.attr().f[0], c.attr().f[1]);
}
// d/dx (x - floor(x / m) * m) = 1 between the jumps.
constexpr void OpDef<OpId::mod>::vjp(VjpCtx& c) {
  c.grads[0] = c.g();
}
// No gradient slot is filled: x gets no contribution (zeros if nothing else reaches it).
constexpr void OpDef<OpId::floor>::vjp(VjpCtx&) {}

}  // namespace stag

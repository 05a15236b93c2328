// Gradients of softmax and log_softmax through their dedicated backward ops, which need only
// the forward output y: dx = y * (g - sum(g * y)) and dx = g - exp(y) * sum(g).
// The mask input of softmax gets no gradient; masked positions have y = 0, hence dx = 0.
#pragma once

#include <stag/ops/softmax/softmax.hpp>

namespace stag {

constexpr void OpDef<OpId::softmax>::vjp(VjpCtx& c) {
  c.grads[0] = softmax_backward(c.y(), c.g(), static_cast<int>(c.attr().i[0]));
}
constexpr void OpDef<OpId::log_softmax>::vjp(VjpCtx& c) {
  c.grads[0] = log_softmax_backward(c.y(), c.g(), static_cast<int>(c.attr().i[0]));
}

}  // namespace stag

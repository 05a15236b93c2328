// Gradients of slice and slice_backward. slice: g written into zeros of the input's shape
// (slice_backward); slice_backward is linear and its gradient is the same slice of g.
#pragma once

#include <stag/ops/slice/slice.hpp>

namespace stag {

constexpr void OpDef<OpId::slice>::vjp(VjpCtx& c) {
  const Attrs& a = c.attr();
  c.grads[0] = slice_backward(c.g(), c.x(0).shape(), static_cast<int>(a.i[0]), a.i[1], a.i[2]);
}
constexpr void OpDef<OpId::slice_backward>::vjp(VjpCtx& c) {
  const Attrs& a = c.attr();
  c.grads[0] = slice(c.g(), static_cast<int>(a.i[0]), a.i[1], a.i[2]);
}

}  // namespace stag

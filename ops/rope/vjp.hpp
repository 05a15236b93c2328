// Gradient of rope: y = R x with R orthogonal (a rotation per pair), so dx = R^T g = R^-1 g,
// which is rope with the same theta, offset and positions and the inverse flag flipped.
#pragma once

#include <stag/ops/rope/rope.hpp>

namespace stag {

// snippet-begin: docs-autodiff-4
constexpr void OpDef<OpId::rope>::vjp(VjpCtx& c) {
  const Attrs& a = c.attr();
  c.grads[0] = c.nin() == 2 ? rope(c.g(), c.x(1), a.f[0], a.i[0], a.i[1] == 0)
                            : rope(c.g(), a.f[0], a.i[0], a.i[1] == 0);
}
// snippet-end: docs-autodiff-4

}  // namespace stag

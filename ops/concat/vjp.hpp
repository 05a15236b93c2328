// Gradient of concat: input k receives its part of g (concat_backward). The axis dims of the
// inputs are c_k * M for one monomial M (a number when static), so the offset of input k is
// (c_0 + ... + c_{k-1}) * M, and M is g's axis length divided by the sum of all c: the kernel
// needs only these static sums and the bound shape of g, whatever the symbols are bound to.
#pragma once

#include <stag/ops/concat/concat.hpp>

namespace stag {

constexpr void OpDef<OpId::concat>::vjp(VjpCtx& c) {
  const int axis = static_cast<int>(c.attr().i[0]);
  std::int64_t total = 0;
  for (int k = 0; k < c.nin(); ++k) total += c.x(k).shape().dims[axis].coef;
  std::int64_t prefix = 0;
  for (int k = 0; k < c.nin(); ++k) {
    const ShapeV& part = c.x(k).shape();
    c.grads[k] = concat_backward(c.g(), part, axis, k, prefix, total);
    prefix += part.dims[axis].coef;
  }
}

}  // namespace stag

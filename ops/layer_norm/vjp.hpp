// Gradient of layer_norm: dx through the dedicated layer_norm_backward op (one fused row
// reduction, as oneDNN's layer_normalization_backward does), dw and db from forward ops:
//   dw = sum_to(g * layer_norm(x) [no affine], w.shape),  db = sum_to(g, b.shape).
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/layer_norm/layer_norm.hpp>
#include <stag/ops/reduce/sum_to.hpp>

namespace stag {

constexpr void OpDef<OpId::layer_norm>::vjp(VjpCtx& c) {
  const int k = static_cast<int>(c.attr().i[0]);
  const double eps = c.attr().f[0];
  const Ref x = c.x(0), g = c.g();
  const bool affine = c.nin() == 3;
  c.grads[0] = layer_norm_backward(x, affine ? c.x(1) : Ref{}, g, k, eps);
  if (!affine) return;
  c.grads[1] = sum_to(g * layer_norm(x, k, eps), c.x(1).shape());
  c.grads[2] = sum_to(g, c.x(2).shape());
}

}  // namespace stag

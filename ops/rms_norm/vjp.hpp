// Gradient of rms_norm: dx through the dedicated rms_norm_backward op, dw from forward ops:
//   dw = sum_to(g * rms_norm(x) [no weight], w.shape).
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/reduce/sum_to.hpp>
#include <stag/ops/rms_norm/rms_norm.hpp>

namespace stag {

constexpr void OpDef<OpId::rms_norm>::vjp(VjpCtx& c) {
  const int k = static_cast<int>(c.attr().i[0]);
  const double eps = c.attr().f[0];
  const Ref x = c.x(0), g = c.g();
  const bool weighted = c.nin() == 2;
  c.grads[0] = rms_norm_backward(x, weighted ? c.x(1) : Ref{}, g, k, eps);
  if (weighted) c.grads[1] = sum_to(g * rms_norm(x, k, eps), c.x(1).shape());
}

}  // namespace stag

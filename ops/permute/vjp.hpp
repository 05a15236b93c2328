// Gradient of permute: the output gradient permuted back by the inverse permutation.
#pragma once

#include <stag/ops/permute/permute.hpp>

namespace stag {

constexpr void OpDef<OpId::permute>::vjp(VjpCtx& c) {
  const int r = c.x(0).rank();
  int inv[kMaxRank] = {};
  for (int k = 0; k < r; ++k) inv[c.attr().i[k]] = k;
  c.grads[0] = permute(c.g(), inv, r);
}

}  // namespace stag

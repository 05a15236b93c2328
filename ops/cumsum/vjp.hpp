// Gradient of cumsum: y_i = sum over j <= i of x_j, so dx_j = sum over i >= j of g_i, the cumsum
// of g from the other end (and the other way round for reverse_scan).
#pragma once

#include <stag/ops/cumsum/cumsum.hpp>

namespace stag {

constexpr void OpDef<OpId::cumsum>::vjp(VjpCtx& c) {
  c.grads[0] = cumsum(c.g(), static_cast<int>(c.attr().i[0]), c.attr().i[1] == 0);
}

}  // namespace stag

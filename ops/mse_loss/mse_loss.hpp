// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::mse_loss> {
  static constexpr OpInfo info{"mse_loss", "mse_loss", 1};
};
}  // namespace stag

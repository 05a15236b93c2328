// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::layer_norm> {
  static constexpr OpInfo info{"layer_norm", "layer_norm", 1};
};
template <>
struct OpDef<OpId::layer_norm_backward> {
  static constexpr OpInfo info{"layer_norm_backward", "layer_norm_backward", 1};
};
}  // namespace stag

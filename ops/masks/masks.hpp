// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::causal_mask> {
  static constexpr OpInfo info{"causal_mask", "causal_mask", 1};
};
template <>
struct OpDef<OpId::padding_mask> {
  static constexpr OpInfo info{"padding_mask", "padding_mask", 1};
};
}  // namespace stag

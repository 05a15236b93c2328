// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::masked_fill> {
  static constexpr OpInfo info{"masked_fill", "masked_fill", 1};
};
}  // namespace stag

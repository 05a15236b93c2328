// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::rope> {
  static constexpr OpInfo info{"rope", "rope", 1};
};
}  // namespace stag

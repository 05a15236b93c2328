// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::where> {
  static constexpr OpInfo info{"where", "where", 1};
};
}  // namespace stag

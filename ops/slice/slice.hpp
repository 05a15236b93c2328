// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::slice> {
  static constexpr OpInfo info{"slice", "slice", 1};
};
}  // namespace stag

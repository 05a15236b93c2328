// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::argmax> {
  static constexpr OpInfo info{"argmax", "argmax", 1};
};
}  // namespace stag

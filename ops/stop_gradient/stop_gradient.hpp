// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::stop_gradient> {
  static constexpr OpInfo info{"stop_gradient", "stop_gradient", 1};
};
}  // namespace stag

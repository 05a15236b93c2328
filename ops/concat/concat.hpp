// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::concat> {
  static constexpr OpInfo info{"concat", "concat", 1};
};
}  // namespace stag

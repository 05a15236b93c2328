// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::cross_entropy> {
  static constexpr OpInfo info{"cross_entropy", "cross_entropy", 1};
};
template <>
struct OpDef<OpId::cross_entropy_backward> {
  static constexpr OpInfo info{"cross_entropy_backward", "cross_entropy_backward", 1};
};
}  // namespace stag

// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::logical_and> {
  static constexpr OpInfo info{"logical_and", "logical_and", 1};
};
template <>
struct OpDef<OpId::logical_or> {
  static constexpr OpInfo info{"logical_or", "logical_or", 1};
};
template <>
struct OpDef<OpId::logical_not> {
  static constexpr OpInfo info{"logical_not", "logical_not", 1};
};
}  // namespace stag

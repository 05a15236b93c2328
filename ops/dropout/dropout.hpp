// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::dropout> {
  static constexpr OpInfo info{"dropout", "dropout", 1};
};
}  // namespace stag

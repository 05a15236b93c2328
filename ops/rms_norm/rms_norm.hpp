// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::rms_norm> {
  static constexpr OpInfo info{"rms_norm", "rms_norm", 1};
};
template <>
struct OpDef<OpId::rms_norm_backward> {
  static constexpr OpInfo info{"rms_norm_backward", "rms_norm_backward", 1};
};
}  // namespace stag

// SKELETON: to be written (rule, typed API, VJP, reference kernel, tests).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {
template <>
struct OpDef<OpId::embedding> {
  static constexpr OpInfo info{"embedding", "embedding", 1};
};
template <>
struct OpDef<OpId::embedding_backward> {
  static constexpr OpInfo info{"embedding_backward", "embedding_backward", 1};
};
}  // namespace stag

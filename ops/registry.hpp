// The op registry: includes every op folder and builds the tables that graph passes and
// backends index by OpCode. ops/op_list.hpp holds the list; this file checks that every op in
// it has a definition (an OpDef<OpId::x> specialisation) at compile time.
#pragma once

#include <array>

// Forward definitions (shape rules, typed front-ends).
#include <stag/ops/argmax/argmax.hpp>
#include <stag/ops/attention/attention.hpp>
#include <stag/ops/binary/binary.hpp>
#include <stag/ops/cache_write/cache_write.hpp>
#include <stag/ops/cast/cast.hpp>
#include <stag/ops/compare/compare.hpp>
#include <stag/ops/concat/concat.hpp>
#include <stag/ops/constant/constant.hpp>
#include <stag/ops/cross_entropy/cross_entropy.hpp>
#include <stag/ops/cumsum/cumsum.hpp>
#include <stag/ops/dropout/dropout.hpp>
#include <stag/ops/embedding/embedding.hpp>
#include <stag/ops/expand/expand.hpp>
#include <stag/ops/input/input.hpp>
#include <stag/ops/layer_norm/layer_norm.hpp>
#include <stag/ops/logical/logical.hpp>
#include <stag/ops/masked_fill/masked_fill.hpp>
#include <stag/ops/masks/masks.hpp>
#include <stag/ops/matmul/matmul.hpp>
#include <stag/ops/mse_loss/mse_loss.hpp>
#include <stag/ops/numel/numel.hpp>
#include <stag/ops/optim/optim.hpp>
#include <stag/ops/parameter/parameter.hpp>
#include <stag/ops/permute/permute.hpp>
#include <stag/ops/positions/positions.hpp>
#include <stag/ops/reduce/reduce.hpp>
#include <stag/ops/reshape/reshape.hpp>
#include <stag/ops/rms_norm/rms_norm.hpp>
#include <stag/ops/rope/rope.hpp>
#include <stag/ops/slice/slice.hpp>
#include <stag/ops/softmax/softmax.hpp>
#include <stag/ops/stop_gradient/stop_gradient.hpp>
#include <stag/ops/unary/unary.hpp>
#include <stag/ops/where/where.hpp>

// Backward rules, written with the forward ops above.
#include <stag/ops/attention/vjp.hpp>
#include <stag/ops/binary/vjp.hpp>
#include <stag/ops/concat/vjp.hpp>
#include <stag/ops/cross_entropy/vjp.hpp>
#include <stag/ops/cumsum/vjp.hpp>
#include <stag/ops/dropout/vjp.hpp>
#include <stag/ops/embedding/vjp.hpp>
#include <stag/ops/expand/vjp.hpp>
#include <stag/ops/layer_norm/vjp.hpp>
#include <stag/ops/masked_fill/vjp.hpp>
#include <stag/ops/matmul/vjp.hpp>
#include <stag/ops/mse_loss/vjp.hpp>
#include <stag/ops/permute/vjp.hpp>
#include <stag/ops/reduce/vjp.hpp>
#include <stag/ops/reshape/vjp.hpp>
#include <stag/ops/rms_norm/vjp.hpp>
#include <stag/ops/rope/vjp.hpp>
#include <stag/ops/slice/vjp.hpp>
#include <stag/ops/softmax/vjp.hpp>
#include <stag/ops/unary/vjp.hpp>
#include <stag/ops/where/vjp.hpp>

namespace stag {

namespace detail {
template <OpId Id>
constexpr VjpFn vjp_of() {
  if constexpr (requires { &OpDef<Id>::vjp; })
    return &OpDef<Id>::vjp;
  else
    return nullptr;
}
}  // namespace detail

// Naming an op without an OpDef here is a compile error: every listed op must be defined.
inline constexpr std::array<OpInfo, kOpCount> kOpInfos = {
#define STAG_X(name) OpDef<OpId::name>::info,
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};

inline constexpr std::array<VjpFn, kOpCount> kOpVjps = {
#define STAG_X(name) detail::vjp_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};

constexpr const OpInfo& op_info(OpCode c) {
  return kOpInfos[c.value];
}
constexpr std::string_view op_name(OpCode c) {
  return kOpInfos[c.value].name;
}

// Each op's registered name matches its list entry (catches copy-paste slips in OpInfo).
constexpr bool registry_names_match() {
  constexpr std::string_view names[] = {
#define STAG_X(name) #name,
      STAG_OP_LIST(STAG_X)
#undef STAG_X
  };
  for (int i = 0; i < kOpCount; ++i)
    if (names[i] != kOpInfos[static_cast<std::size_t>(i)].name) return false;
  return true;
}
static_assert(registry_names_match(), "stag: an OpDef's info.name differs from its op_list entry");

}  // namespace stag

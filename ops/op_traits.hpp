// The per-op traits every backend and the planner read, built from the registry (ops/<op>/<op>.hpp
// declares them on OpDef<Id>): the reference kernel (the oracle and the fallback), the inputs
// an op's kernels may overwrite with its output (elementwise ops), the inputs it writes as side
// effects (optimizer updates, cache writes), and the input whose bytes are its result after the
// write. Device-neutral: the CPU backend's own tables (kernel factories, strided inputs) are in
// runtime/cpu/kernel_tables.hpp, the CUDA backend's in runtime/cuda/kernels.cpp.
#pragma once

#include <array>
#include <cstdint>

#include <stag/ops/registry.hpp>

namespace stag {

namespace detail {
template <OpId Id>
constexpr KernelFn reference_of() {
  if constexpr (requires { &OpDef<Id>::reference; })
    return &OpDef<Id>::reference;
  else
    return nullptr;
}
// Bit k: the op's kernels (every backend's and the reference) may write the output over input
// k when it has the output's shape and dtype (elementwise ops).
template <OpId Id>
constexpr std::uint8_t in_place_of() {
  if constexpr (requires { OpDef<Id>::in_place; })
    return OpDef<Id>::in_place;
  else
    return 0;
}
// Bit k: the op writes input k in place (optimizer updates of parameters and their state).
template <OpId Id>
constexpr std::uint8_t writes_of() {
  if constexpr (requires { OpDef<Id>::writes; })
    return OpDef<Id>::writes;
  else
    return 0;
}
// The input k whose bytes, after the op wrote them in place, are the op's result (-1: none).
// The result is then no new buffer: its readers read input k, and they run after the writer
// because they read the writer's node (cache_write returns the cache it wrote).
template <OpId Id>
constexpr std::int8_t result_is_of() {
  if constexpr (requires { OpDef<Id>::result_is; })
    return OpDef<Id>::result_is;
  else
    return -1;
}
}  // namespace detail

inline constexpr std::array<std::uint8_t, kOpCount> kWrites = {
#define STAG_X(name) detail::writes_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};
inline constexpr std::array<std::int8_t, kOpCount> kResultIs = {
#define STAG_X(name) detail::result_is_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};
inline constexpr std::array<KernelFn, kOpCount> kReferenceKernels = {
#define STAG_X(name) detail::reference_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};
inline constexpr std::array<std::uint8_t, kOpCount> kInPlace = {
#define STAG_X(name) detail::in_place_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};

}  // namespace stag

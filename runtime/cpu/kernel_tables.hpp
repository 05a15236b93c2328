// Per-op tables of the run-time kernels, built from the registry: reference kernels, CPU kernel
// factories, and the CPU traits the planner reads (inputs a kernel reads through arbitrary
// strides, inputs it may overwrite in place). An op without an entry falls back to reference.
#pragma once

#include <array>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/registry.hpp>

namespace stag {

using CpuFactory = std::unique_ptr<CpuKernel> (*)(const CpuNode&);

namespace detail {
template <OpId Id>
constexpr KernelFn reference_of() {
  if constexpr (requires { &OpDef<Id>::reference; })
    return &OpDef<Id>::reference;
  else
    return nullptr;
}
template <OpId Id>
constexpr CpuFactory cpu_of() {
  if constexpr (requires { &OpDef<Id>::cpu; })
    return &OpDef<Id>::cpu;
  else
    return nullptr;
}
// Bit k: the CPU kernel reads input k through any strides (a permute can stay a view).
template <OpId Id>
constexpr std::uint8_t cpu_strided_of() {
  if constexpr (requires { OpDef<Id>::cpu_strided; })
    return OpDef<Id>::cpu_strided;
  else
    return 0;
}
// Bit k: the op's kernels (CPU and reference) may write the output over input k when it has
// the output's shape and dtype (elementwise ops).
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
inline constexpr std::array<CpuFactory, kOpCount> kCpuFactories = {
#define STAG_X(name) detail::cpu_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};
inline constexpr std::array<std::uint8_t, kOpCount> kCpuStrided = {
#define STAG_X(name) detail::cpu_strided_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};
inline constexpr std::array<std::uint8_t, kOpCount> kInPlace = {
#define STAG_X(name) detail::in_place_of<OpId::name>(),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};

}  // namespace stag

// The CPU backend's per-op tables, built from the registry: its kernel factories and the inputs
// its kernels read through arbitrary strides. An op without a CPU factory (or whose factory
// returns nullptr for a node) runs its reference kernel. The traits every backend shares
// (reference kernels, in-place and written inputs) are in ops/op_traits.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/op_traits.hpp>

namespace stag {

using CpuFactory = std::unique_ptr<Kernel> (*)(const KernelNode&);

namespace detail {
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
}  // namespace detail

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

}  // namespace stag

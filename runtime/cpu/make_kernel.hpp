// What the planner (runtime/plan.cpp) asks of the CPU backend, the one entry from the runtime's
// core into runtime/cpu/: which inputs of an op its CPU kernel reads through strides (step 3,
// views), and the CPU kernel of a plan's compute node (step 8): the op's own kernel
// (kCpuFactories) or else its reference kernel, with the operations the planner folded into a
// matmul applied after a kernel that does not do them, and on one thread when the node is
// small (the rule and its figures: make_kernel.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include <stag/ops/cpu_kernel.hpp>

namespace stag {

// Bit k: the op's CPU kernel reads input k through any strides (kCpuStrided).
std::uint8_t cpu_strided(OpCode op);
// A stag::Error naming the node when the op has neither kernel.
std::unique_ptr<Kernel> make_cpu_kernel(const KernelNode& cn);

}  // namespace stag

// The CPU kernel of a plan's compute node (runtime/plan.cpp, step 8): the op's own kernel
// (kCpuFactories) or else its reference kernel, with the operations the planner folded into a
// matmul applied after a kernel that does not do them, and on one thread when the node is
// small (the rule and its figures: make_kernel.cpp).
#pragma once

#include <memory>

#include <stag/ops/cpu_kernel.hpp>

namespace stag {

// A stag::Error naming the node when the op has neither kernel.
std::unique_ptr<CpuKernel> make_cpu_kernel(const CpuNode& cn);

}  // namespace stag

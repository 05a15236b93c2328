// Run-time helper shared by the fused attention's reference and CPU kernels (not part of the
// op's graph-building header, which must not need the run-time types).
#pragma once

#include <cstdint>

#include <stag/ops/attention/attention.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::kernel {

// Checks the cache positions of sdpa over a cache: each of pos[0 .. batch) must be -1 (an
// inactive row) or in [0, sk - sq]; otherwise a stag::Error naming the node, the row and the
// bounds.
void check_cache_positions(const GraphView& g, int node, const std::int32_t* pos,
                           std::int64_t batch, std::int64_t sq, std::int64_t sk);

}  // namespace stag::kernel

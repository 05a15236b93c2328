// Run-time helper shared by cache_write's reference and CPU kernels (not part of the op's
// graph-building header, which must not need the run-time types).
#pragma once

#include <stag/ops/cache_write/cache_write.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::kernel {

// The position a cache_write node writes at, checked against the cache: throws stag::Error
// naming the node when pos < 0 or pos + T > L.
std::int64_t cache_write_position(const GraphView& g, int node, const TensorView& cache,
                                  const TensorView& rows, const TensorView& pos);

}  // namespace stag::kernel

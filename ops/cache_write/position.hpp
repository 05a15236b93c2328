// Run-time helper shared by cache_write's reference and CPU kernels (not part of the op's
// graph-building header, which must not need the run-time types).
#pragma once

#include <vector>

#include <stag/ops/cache_write/cache_write.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::kernel {

// The position each row of the cache's first dim is written at (-1: not written), all checked
// against the cache before anything is written: throws stag::Error naming the node when a
// position is < 0 (other than a per-row -1) or pos + T > L.
std::vector<std::int64_t> cache_write_positions(const GraphView& g, int node,
                                                const TensorView& cache, const TensorView& rows,
                                                const TensorView& pos);

// The cache as `outer` blocks of [len, row_bytes] (`inner` blocks per index of dim 0) and the
// rows as blocks of [t, row_bytes].
struct CacheWriteLayout {
  std::int64_t outer = 1, inner = 1, len = 0, t = 0, row_bytes = 0;
};
CacheWriteLayout cache_write_layout(const TensorView& cache, const TensorView& rows);

}  // namespace stag::kernel

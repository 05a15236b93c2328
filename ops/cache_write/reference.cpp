// Reference kernel of cache_write: the position check, then one row block copy per leading
// index, then the whole cache copied to the result when the result is not the cache's own
// bytes (the reference evaluator gives every node a fresh output). Works on raw bytes, so
// every dtype is handled the same way.
#include <cstring>
#include <string>

#include <stag/ops/cache_write/position.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

kernel::CacheWriteLayout kernel::cache_write_layout(const TensorView& cache,
                                                    const TensorView& rows) {
  CacheWriteLayout l;
  l.len = cache.dims[cache.rank - 2];
  l.t = rows.dims[rows.rank - 2];
  l.row_bytes = cache.dims[cache.rank - 1] * static_cast<std::int64_t>(dtype_size(cache.dtype));
  for (int d = 0; d < cache.rank - 2; ++d) l.outer *= cache.dims[d];
  // A cache [L, D] has no batch dim: one block, one position.
  l.inner = cache.rank >= 3 && cache.dims[0] > 0 ? l.outer / cache.dims[0] : l.outer;
  return l;
}

std::vector<std::int64_t> kernel::cache_write_positions(const GraphView& g, int node,
                                                        const TensorView& cache,
                                                        const TensorView& rows,
                                                        const TensorView& pos) {
  // Per row when pos is [B] in the graph (B, the cache's first dim before [L, D], not a static
  // 1), whatever B is bound to.
  const ShapeV& ps = g.shape(g.node(node).in[2]);
  const bool per_row = cache.rank >= 3 && ps.rank == 1 && !(ps.dims[0] == static_dim(1)) &&
                       ps.dims[0] == g.shape(g.node(node).in[0]).dims[0];
  const std::int64_t batch = cache.rank >= 3 ? cache.dims[0] : 1;
  const std::int64_t len = cache.dims[cache.rank - 2], t = rows.dims[rows.rank - 2];
  std::vector<std::int64_t> at(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t i = per_row ? b : 0;
    const std::int64_t p = pos.dtype == DType::i64
                               ? pos.as<const std::int64_t>()[i]
                               : static_cast<std::int64_t>(pos.as<const std::int32_t>()[i]);
    at[static_cast<std::size_t>(b)] = p;
    if (per_row && p == -1) continue;  // row b is not written
    // NOTE: written as p > len - t, not p + t > len: p is a user's value and may be near
    // INT64_MAX.
    if (p < 0 || p > len - t)
      throw Error("stag: " + g.name(node) + ": cache_write of " + std::to_string(t) +
                  " row(s) at position " + std::to_string(p) +
                  (per_row ? " (batch row " + std::to_string(b) + ")" : std::string()) +
                  " does not fit a cache of " + std::to_string(len) +
                  " positions (pos must be in [0, " + std::to_string(len - t) + "]" +
                  (per_row ? ", or -1 to leave the row alone" : "") +
                  "); make the cache longer (max_len) or stop earlier");
  }
  return at;
}

void OpDef<OpId::cache_write>::reference(const KernelArgs& a) {
  const TensorView& cache = a.in[0];
  const TensorView& rows = a.in[1];
  const std::vector<std::int64_t> at =
      kernel::cache_write_positions(a.g, a.node, cache, rows, a.in[2]);
  const kernel::CacheWriteLayout l = kernel::cache_write_layout(cache, rows);
  auto* dst = static_cast<char*>(cache.data);
  const auto* src = static_cast<const char*>(rows.data);
  for (std::int64_t o = 0; o < l.outer; ++o) {
    const std::int64_t p = at[static_cast<std::size_t>(o / l.inner)];
    if (p >= 0 && l.t > 0 && l.row_bytes > 0)
      std::memcpy(dst + (o * l.len + p) * l.row_bytes, src + o * l.t * l.row_bytes,
                  static_cast<std::size_t>(l.t * l.row_bytes));
  }
  if (a.out.data != cache.data)
    std::memcpy(a.out.data, cache.data,
                static_cast<std::size_t>(cache.numel()) * dtype_size(cache.dtype));
}

}  // namespace stag

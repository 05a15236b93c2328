// Reference kernel of cache_write: the position check, then one row block copy per leading
// index. Works on raw bytes, so every dtype is handled the same way.
#include <cstring>
#include <string>

#include <stag/ops/cache_write/position.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

std::int64_t kernel::cache_write_position(const GraphView& g, int node, const TensorView& cache,
                                          const TensorView& rows, const TensorView& pos) {
  const std::int64_t p = pos.dtype == DType::i64
                             ? pos.as<const std::int64_t>()[0]
                             : static_cast<std::int64_t>(pos.as<const std::int32_t>()[0]);
  const std::int64_t len = cache.dims[cache.rank - 2], t = rows.dims[rows.rank - 2];
  // NOTE: written as p > len - t, not p + t > len: p is a user's value and may be near INT64_MAX.
  if (p < 0 || p > len - t)
    throw Error("stag: " + g.name(node) + ": cache_write of " + std::to_string(t) +
                " row(s) at position " + std::to_string(p) + " does not fit a cache of " +
                std::to_string(len) + " positions (pos must be in [0, " + std::to_string(len - t) +
                "]); make the cache longer (max_len) or stop earlier");
  return p;
}

void OpDef<OpId::cache_write>::reference(const KernelArgs& a) {
  const TensorView& cache = a.in[0];
  const TensorView& rows = a.in[1];
  const std::int64_t p = kernel::cache_write_position(a.g, a.node, cache, rows, a.in[2]);
  kernel::store(a.out, 0, 0.0);
  const std::int64_t len = cache.dims[cache.rank - 2], t = rows.dims[rows.rank - 2];
  const std::int64_t row_bytes =
      cache.dims[cache.rank - 1] * static_cast<std::int64_t>(dtype_size(cache.dtype));
  std::int64_t outer = 1;
  for (int d = 0; d < cache.rank - 2; ++d) outer *= cache.dims[d];
  auto* dst = static_cast<char*>(cache.data);
  const auto* src = static_cast<const char*>(rows.data);
  for (std::int64_t o = 0; o < outer; ++o)
    if (t > 0 && row_bytes > 0)
      std::memcpy(dst + (o * len + p) * row_bytes, src + o * t * row_bytes,
                  static_cast<std::size_t>(t * row_bytes));
}

}  // namespace stag

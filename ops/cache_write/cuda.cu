// CUDA kernels of cache_write: the positions are checked first (one thread per batch row; a row
// that does not fit records its batch index in the plan's bad-input word, and the host then
// throws the CPU's message), then the rows are copied into the cache element by element unless
// something was bad, so that a bad position changes nothing, as on the CPU
// (ops/cache_write/reference.cpp). Elements are moved as raw bits: every dtype is the same.
#include <stag/graph/dtype.hpp>
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__device__ inline std::int64_t position(const void* pos, bool pos64, std::int64_t i) {
  return pos64 ? static_cast<const std::int64_t*>(pos)[i]
               : static_cast<std::int64_t>(static_cast<const std::int32_t*>(pos)[i]);
}

__global__ void check_kernel(CacheWriteArgs a, Bad bad) {
  for (std::int64_t b = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; b < a.batch;
       b += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t p = position(a.pos, a.pos64, a.per_row ? b : 0);
    if (a.per_row && p == -1) continue;  // row b is not written
    if (p < 0 || p > a.len - a.t) report_bad(bad, b);
  }
}

template <class E>
__global__ void write_kernel(CacheWriteArgs a, const E* rows, E* cache, Bad bad) {
  if (any_bad(bad)) return;  // the step will throw; leave the cache as it was
  const std::int64_t per_block = a.t * a.d, n = a.outer * per_block;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t o = i / per_block;
    const std::int64_t p = position(a.pos, a.pos64, a.per_row ? o / a.inner : 0);
    if (p < 0) continue;
    cache[(o * a.len + p) * a.d + i % per_block] = rows[i];
  }
}

template <class E>
void write(const Launch& l, const CacheWriteArgs& a, const Tensor& rows, const Tensor& cache) {
  STAG_LAUNCH(write_kernel<E>, blocks_for(a.outer * a.t * a.d), kThreads, 0, stream_of(l))
  (a, static_cast<const E*>(rows.data), static_cast<E*>(cache.data), bad_of(l));
}

}  // namespace

void cache_write(const Launch& l, const CacheWriteArgs& a, const Tensor& rows,
                 const Tensor& cache) {
  STAG_LAUNCH(check_kernel, blocks_for(a.batch), kThreads, 0, stream_of(l))(a, bad_of(l));
  if (a.outer * a.t * a.d == 0) return;
  switch (dtype_size(static_cast<DType>(cache.dtype))) {
    case 8:
      return write<std::uint64_t>(l, a, rows, cache);
    case 2:
      return write<std::uint16_t>(l, a, rows, cache);
    case 1:
      return write<std::uint8_t>(l, a, rows, cache);
    default:
      return write<std::uint32_t>(l, a, rows, cache);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

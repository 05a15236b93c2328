// CUDA kernel of cast, and the strided copy behind the layout ops: out (any strides) gets x read
// broadcast to out's dims. The same dtype copies the element's bytes; another dtype is
// converted through double, rounding once. NOTE: i64 values beyond 2^53 cast to bf16 round
// twice (the reference rounds once through long double, which the GPU has not).
#include <stag/graph/dtype.hpp>
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class E>
__global__ void copy_kernel(Index<2> ix, const E* x, E* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    out[off[1]] = x[off[0]];
  }
}

__global__ void convert_kernel(Index<2> ix, const void* x, Dt xt, void* out, Dt ot,
                               std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    store(out, ot, off[1], load(x, xt, off[0]));
  }
}

}  // namespace

void convert(const Launch& l, const Tensor& x, const Tensor& out) {
  const Tensor* ins[2] = {&x, &out};
  const auto ix = index_for(out, ins);
  const std::int64_t n = numel(out);
  const unsigned g = blocks_for(n);
  cudaStream_t s = stream_of(l);
  if (x.dtype != out.dtype) {
    STAG_LAUNCH(convert_kernel, g, kThreads, 0, s)(ix, x.data, x.dtype, out.data, out.dtype, n);
    return;
  }
  switch (dtype_size(static_cast<DType>(out.dtype))) {
    case 8:
      STAG_LAUNCH(copy_kernel<std::uint64_t>, g, kThreads, 0, s)
      (ix, static_cast<const std::uint64_t*>(x.data), static_cast<std::uint64_t*>(out.data), n);
      return;
    case 2:
      STAG_LAUNCH(copy_kernel<std::uint16_t>, g, kThreads, 0, s)
      (ix, static_cast<const std::uint16_t*>(x.data), static_cast<std::uint16_t*>(out.data), n);
      return;
    case 1:
      STAG_LAUNCH(copy_kernel<std::uint8_t>, g, kThreads, 0, s)
      (ix, static_cast<const std::uint8_t*>(x.data), static_cast<std::uint8_t*>(out.data), n);
      return;
    default:
      STAG_LAUNCH(copy_kernel<std::uint32_t>, g, kThreads, 0, s)
      (ix, static_cast<const std::uint32_t*>(x.data), static_cast<std::uint32_t*>(out.data), n);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

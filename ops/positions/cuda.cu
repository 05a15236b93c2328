// CUDA kernel of positions: start, start + 1, ... in out's dtype.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__global__ void iota_kernel(std::int64_t start, void* out, Dt t, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    if (t == Dt::i64)
      static_cast<std::int64_t*>(out)[i] = start + i;
    else
      store(out, t, i, static_cast<double>(start + i));
  }
}

}  // namespace

void iota(const Launch& l, std::int64_t start, const Tensor& out) {
  const std::int64_t n = numel(out);
  STAG_LAUNCH(iota_kernel, blocks_for(n), kThreads, 0, stream_of(l))(start, out.data, out.dtype, n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

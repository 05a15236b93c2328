// CUDA kernel of constant: every element of out gets the value, rounded to out's dtype.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__global__ void fill_kernel(double value, void* out, Dt t, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    store(out, t, i, value);
}

}  // namespace

void fill(const Launch& l, double value, const Tensor& out) {
  const std::int64_t n = numel(out);
  STAG_LAUNCH(fill_kernel, blocks_for(n), kThreads, 0, stream_of(l))(value, out.data, out.dtype, n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

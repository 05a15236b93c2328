// CUDA kernels of causal_mask and padding_mask. A length outside [0, S] records its batch row
// in Launch::bad (the host reports it as the reference does).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__global__ void causal_kernel(std::int64_t sq, std::int64_t sk, bool* out) {
  const std::int64_t n = sq * sk;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t q = i / sk, k = i % sk;
    out[i] = k <= q + (sk - sq);
  }
}

__global__ void padding_kernel(const void* lengths, bool wide, std::int64_t batch, std::int64_t s,
                               bool* out, Bad bad) {
  const std::int64_t n = batch * s;
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t b = i / s, k = i % s;
    const std::int64_t len = wide ? static_cast<const std::int64_t*>(lengths)[b]
                                  : static_cast<const std::int32_t*>(lengths)[b];
    if ((len < 0 || len > s) && k == 0) report_bad(bad, b);
    out[i] = k < len;
  }
}

}  // namespace

void causal_mask(const Launch& l, const Tensor& out) {
  const std::int64_t n = numel(out);
  STAG_LAUNCH(causal_kernel, blocks_for(n), kThreads, 0, stream_of(l))
  (out.dims[0], out.dims[1], static_cast<bool*>(out.data));
}

void padding_mask(const Launch& l, const Tensor& lengths, const Tensor& out) {
  const std::int64_t n = numel(out);
  STAG_LAUNCH(padding_kernel, blocks_for(n), kThreads, 0, stream_of(l))
  (lengths.data, lengths.dtype == Dt::i64, out.dims[0], out.dims[1], static_cast<bool*>(out.data),
   bad_of(l));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

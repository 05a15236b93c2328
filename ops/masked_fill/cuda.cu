// CUDA kernel of masked_fill: x copied, `value` stored (rounded to x's dtype) where the
// broadcast mask is true.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__global__ void masked_fill_kernel(Index<2> ix, const void* x, const bool* mask, double value,
                                   void* out, Dt t, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    if (mask[off[1]])
      store(out, t, i, value);
    else if (t == Dt::f32)  // exact copies (an i64 through double would round)
      static_cast<float*>(out)[i] = static_cast<const float*>(x)[off[0]];
    else if (t == Dt::i64)
      static_cast<std::int64_t*>(out)[i] = static_cast<const std::int64_t*>(x)[off[0]];
    else
      store(out, t, i, load(x, t, off[0]));
  }
}

}  // namespace

void masked_fill(const Launch& l, const Tensor& x, const Tensor& mask, double value,
                 const Tensor& out) {
  const Tensor* ins[2] = {&x, &mask};
  const std::int64_t n = numel(out);
  STAG_LAUNCH(masked_fill_kernel, blocks_for(n), kThreads, 0, stream_of(l))
  (index_for(out, ins), x.data, static_cast<const bool*>(mask.data), value, out.data, out.dtype, n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

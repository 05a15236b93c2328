// CUDA kernel of mse_loss: one block sums the squared differences in double, in a fixed order.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void mse_kernel(const T* p, const T* t, std::int64_t n, T* out) {
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
    s += d * d;
  }
  s = block_sum(s);
  if (threadIdx.x == 0) out[0] = static_cast<T>(n == 0 ? 0.0 : s / static_cast<double>(n));
}

}  // namespace

void mse_loss(const Launch& l, const Tensor& pred, const Tensor& target, const Tensor& out) {
  const std::int64_t n = numel(pred);
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(mse_kernel<double>, 1, 1024, 0, stream_of(l))
    (static_cast<const double*>(pred.data), static_cast<const double*>(target.data), n,
     static_cast<double*>(out.data));
  else
    STAG_LAUNCH(mse_kernel<float>, 1, 1024, 0, stream_of(l))
    (static_cast<const float*>(pred.data), static_cast<const float*>(target.data), n,
     static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

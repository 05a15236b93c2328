// CUDA kernels of rms_norm and rms_norm_backward: one block per normalised row, the mean
// square and the sums in double, as the reference.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__device__ double row_rstd(const T* xr, std::int64_t n, double eps) {
  double ss = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x)
    ss += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
  return 1.0 / sqrt(block_sum(ss) / static_cast<double>(n) + eps);
}

template <class T>
__global__ void forward_kernel(std::int64_t n, double eps, const T* x, const T* w, T* y) {
  const T* xr = x + blockIdx.x * n;
  T* yr = y + blockIdx.x * n;
  const double rstd = row_rstd(xr, n, eps);
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double v = static_cast<double>(xr[i]) * rstd;
    yr[i] = static_cast<T>(w ? v * static_cast<double>(w[i]) : v);
  }
}

template <class T>
__global__ void backward_kernel(std::int64_t n, double eps, const T* x, const T* w, const T* g,
                                T* dx) {
  const T* xr = x + blockIdx.x * n;
  const T* gr = g + blockIdx.x * n;
  T* dr = dx + blockIdx.x * n;
  const double rstd = row_rstd(xr, n, eps);
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double gh = static_cast<double>(gr[i]) * (w ? static_cast<double>(w[i]) : 1.0);
    s += gh * static_cast<double>(xr[i]) * rstd;
  }
  const double mean_ghxh = block_sum(s) / static_cast<double>(n);
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double gh = static_cast<double>(gr[i]) * (w ? static_cast<double>(w[i]) : 1.0);
    dr[i] = static_cast<T>(rstd * (gh - static_cast<double>(xr[i]) * rstd * mean_ghxh));
  }
}

template <class T>
const T* ptr(const Tensor* t) {
  return t ? static_cast<const T*>(t->data) : nullptr;
}

}  // namespace

void rms_norm(const Launch& l, std::int64_t n, double eps, const Tensor& x, const Tensor* w,
              const Tensor& out) {
  if (n == 0) return;
  const auto rows = static_cast<unsigned>(numel(out) / n);
  if (rows == 0) return;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(forward_kernel<double>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const double*>(x.data), ptr<double>(w), static_cast<double*>(out.data));
  else
    STAG_LAUNCH(forward_kernel<float>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const float*>(x.data), ptr<float>(w), static_cast<float*>(out.data));
}

void rms_norm_backward(const Launch& l, std::int64_t n, double eps, const Tensor& x,
                       const Tensor* w, const Tensor& g, const Tensor& out) {
  if (n == 0) return;
  const auto rows = static_cast<unsigned>(numel(out) / n);
  if (rows == 0) return;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(backward_kernel<double>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const double*>(x.data), ptr<double>(w), static_cast<const double*>(g.data),
     static_cast<double*>(out.data));
  else
    STAG_LAUNCH(backward_kernel<float>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const float*>(x.data), ptr<float>(w), static_cast<const float*>(g.data),
     static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

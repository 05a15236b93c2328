// CUDA kernels of layer_norm and layer_norm_backward: one block per normalised row, the mean
// and the two-pass variance in double, as the reference.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__device__ void row_stats(const T* xr, std::int64_t n, double eps, double& mean, double& rstd) {
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) s += static_cast<double>(xr[i]);
  mean = block_sum(s) / static_cast<double>(n);
  double ss = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double d = static_cast<double>(xr[i]) - mean;
    ss += d * d;
  }
  rstd = 1.0 / sqrt(block_sum(ss) / static_cast<double>(n) + eps);
}

template <class T>
__global__ void forward_kernel(std::int64_t n, double eps, const T* x, const T* w, const T* b,
                               T* y) {
  const T* xr = x + blockIdx.x * n;
  T* yr = y + blockIdx.x * n;
  double mean, rstd;
  row_stats(xr, n, eps, mean, rstd);
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    double v = (static_cast<double>(xr[i]) - mean) * rstd;
    if (w) v = v * static_cast<double>(w[i]) + static_cast<double>(b[i]);
    yr[i] = static_cast<T>(v);
  }
}

template <class T>
__global__ void backward_kernel(std::int64_t n, double eps, const T* x, const T* w, const T* g,
                                T* dx) {
  const T* xr = x + blockIdx.x * n;
  const T* gr = g + blockIdx.x * n;
  T* dr = dx + blockIdx.x * n;
  double mean, rstd;
  row_stats(xr, n, eps, mean, rstd);
  double sg = 0, sgx = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double gh = static_cast<double>(gr[i]) * (w ? static_cast<double>(w[i]) : 1.0);
    sg += gh;
    sgx += gh * (static_cast<double>(xr[i]) - mean) * rstd;
  }
  sg = block_sum(sg);
  sgx = block_sum(sgx);
  const double inv_n = 1.0 / static_cast<double>(n);
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const double gh = static_cast<double>(gr[i]) * (w ? static_cast<double>(w[i]) : 1.0);
    const double xh = (static_cast<double>(xr[i]) - mean) * rstd;
    dr[i] = static_cast<T>(rstd * (gh - sg * inv_n - xh * sgx * inv_n));
  }
}

template <class T>
const T* ptr(const Tensor* t) {
  return t ? static_cast<const T*>(t->data) : nullptr;
}

}  // namespace

void layer_norm(const Launch& l, std::int64_t n, double eps, const Tensor& x, const Tensor* w,
                const Tensor* b, const Tensor& out) {
  if (n == 0) return;
  const auto rows = static_cast<unsigned>(numel(out) / n);
  if (rows == 0) return;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(forward_kernel<double>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const double*>(x.data), ptr<double>(w), ptr<double>(b),
     static_cast<double*>(out.data));
  else
    STAG_LAUNCH(forward_kernel<float>, rows, kThreads, 0, stream_of(l))
    (n, eps, static_cast<const float*>(x.data), ptr<float>(w), ptr<float>(b),
     static_cast<float*>(out.data));
}

void layer_norm_backward(const Launch& l, std::int64_t n, double eps, const Tensor& x,
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

// CUDA kernels of the unary ops and unary_backward: one thread per output element, the
// formulas of ops/unary/math.hpp (shared with the reference and CPU kernels).
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/unary/math.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void unary_kernel(OpId op, double p, double q, Index<1> ix, const T* x, T* y,
                             std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[1];
    ix.offsets(i, off);
    y[i] = unary_math::forward<T>(op, x[off[0]], p, q);
  }
}

template <class T>
__global__ void unary_backward_kernel(OpId op, double p, double q, Index<3> ix, const T* x,
                                      const T* y, const T* g, T* dx, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[3];
    ix.offsets(i, off);
    dx[i] = unary_math::backward<T>(op, x[off[0]], y[off[1]], g[off[2]], p, q);
  }
}

}  // namespace

void unary(const Launch& l, int op, double p, double q, const Tensor& x, const Tensor& out) {
  const Tensor* ins[1] = {&x};
  const auto ix = index_for(out, ins);
  const std::int64_t n = numel(out);
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(unary_kernel<double>, blocks_for(n), kThreads, 0, stream_of(l))
    (static_cast<OpId>(op), p, q, ix, static_cast<const double*>(x.data),
     static_cast<double*>(out.data), n);
  else
    STAG_LAUNCH(unary_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))
    (static_cast<OpId>(op), p, q, ix, static_cast<const float*>(x.data),
     static_cast<float*>(out.data), n);
}

void unary_backward(const Launch& l, int fwd_op, double p, double q, const Tensor& x,
                    const Tensor& y, const Tensor& g, const Tensor& out) {
  const Tensor* ins[3] = {&x, &y, &g};
  const auto ix = index_for(out, ins);
  const std::int64_t n = numel(out);
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(unary_backward_kernel<double>, blocks_for(n), kThreads, 0, stream_of(l))
    (static_cast<OpId>(fwd_op), p, q, ix, static_cast<const double*>(x.data),
     static_cast<const double*>(y.data), static_cast<const double*>(g.data),
     static_cast<double*>(out.data), n);
  else
    STAG_LAUNCH(unary_backward_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))
    (static_cast<OpId>(fwd_op), p, q, ix, static_cast<const float*>(x.data),
     static_cast<const float*>(y.data), static_cast<const float*>(g.data),
     static_cast<float*>(out.data), n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

// CUDA kernels of sgd_update and adam_update: one thread per parameter element, the formulas of
// ops/optim/update.hpp (shared with the reference and CPU kernels). The scalars (learning rate,
// step, gradient scale, settings) are read from device memory, so a captured step replays with
// the values of each step; a non-finite gradient scale skips the update, as on the CPU.
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/optim/update.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void sgd_kernel(OptimAttrs at, T* p, const T* g, T* buf, const float* lr,
                           const float* gscale, const float* hp, std::int64_t n, Bad bad) {
  const double gs = gscale[0];
  if (!isfinite(gs) || any_bad(bad)) return;
  float h[2] = {};
  if (hp) h[0] = hp[0], h[1] = hp[1];
  const optim::SgdScalars sc = optim::sgd_scalars(at.f, at.i, hp ? h : nullptr);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    optim::sgd_step<T>(p[i], g[i] * static_cast<T>(gs), buf[i], lr[0], sc.momentum, sc.wd,
                       at.i[0] != 0);
}

template <class T>
__global__ void adam_kernel(OptimAttrs at, T* p, const T* g, T* m, T* v, const float* lr,
                            const float* t, const float* gscale, const float* hp, std::int64_t n,
                            Bad bad) {
  const double gs = gscale[0];
  if (!isfinite(gs) || any_bad(bad)) return;
  float h[4] = {};
  if (hp)
    for (int k = 0; k < 4; ++k) h[k] = hp[k];
  const double step = fmax(1.0, static_cast<double>(t[0]));
  const optim::AdamScalars s = optim::adam_scalars(lr[0], step, at.f, at.i, hp ? h : nullptr);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x)
    optim::adam_step<T>(p[i], g[i] * static_cast<T>(gs), m[i], v[i], s);
}

__global__ void zero_scalar(float* out) {
  out[0] = 0;
}

}  // namespace

void sgd_update(const Launch& l, const OptimAttrs& at, const Tensor& p, const Tensor& g,
                const Tensor& buf, const float* lr, const float* gscale, const float* hp,
                const Tensor& out) {
  const std::int64_t n = numel(p);
  STAG_LAUNCH(zero_scalar, 1, 1, 0, stream_of(l))(static_cast<float*>(out.data));
  STAG_LAUNCH(sgd_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))
  (at, static_cast<float*>(p.data), static_cast<const float*>(g.data),
   static_cast<float*>(buf.data), lr, gscale, hp, n, bad_of(l));
}

void adam_update(const Launch& l, const OptimAttrs& at, const Tensor& p, const Tensor& g,
                 const Tensor& m, const Tensor& v, const float* lr, const float* t,
                 const float* gscale, const float* hp, const Tensor& out) {
  const std::int64_t n = numel(p);
  STAG_LAUNCH(zero_scalar, 1, 1, 0, stream_of(l))(static_cast<float*>(out.data));
  STAG_LAUNCH(adam_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))
  (at, static_cast<float*>(p.data), static_cast<const float*>(g.data), static_cast<float*>(m.data),
   static_cast<float*>(v.data), lr, t, gscale, hp, n, bad_of(l));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

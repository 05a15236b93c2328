// CUDA kernels of softmax, log_softmax and their backward ops: one block per row along the
// axis, sums and maxima in double as the reference. A fully masked row gives zeros (softmax)
// or -inf (log_softmax), as on the CPU.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

struct Rows {
  std::int64_t outer = 1, len = 1, inner = 1;
};
Rows rows_of(const Tensor& t, int axis) {
  Rows r;
  for (int d = 0; d < axis; ++d) r.outer *= t.dims[d];
  for (int d = axis + 1; d < t.rank; ++d) r.inner *= t.dims[d];
  r.len = t.dims[axis];
  return r;
}

template <class T>
__global__ void softmax_kernel(bool log, Rows r, const T* x, const bool* mask, Index<1> mix, T* y) {
  const std::int64_t row = blockIdx.x;
  const std::int64_t base = (row / r.inner) * r.len * r.inner + row % r.inner;
  auto keep = [&](std::int64_t i) {
    if (mask == nullptr) return true;
    std::int64_t off[1];
    mix.offsets(i, off);
    return mask[off[0]];
  };
  double mx = -INFINITY;
  for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x) {
    const std::int64_t i = base + k * r.inner;
    if (keep(i) && static_cast<double>(x[i]) > mx) mx = x[i];
  }
  mx = block_max(mx);
  if (mx == -INFINITY) {
    for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x)
      y[base + k * r.inner] = log ? T(-INFINITY) : T(0);
    return;
  }
  double z = 0;
  for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x) {
    const std::int64_t i = base + k * r.inner;
    if (keep(i)) z += exp(static_cast<double>(x[i]) - mx);
  }
  z = block_sum(z);
  const double lz = ::log(z);
  for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x) {
    const std::int64_t i = base + k * r.inner;
    const double v = static_cast<double>(x[i]) - mx;
    const bool kp = keep(i);
    y[i] = static_cast<T>(log ? (kp ? v - lz : -INFINITY) : (kp ? exp(v) / z : 0.0));
  }
}

template <class T>
__global__ void softmax_backward_kernel(bool log, Rows r, const T* y, const T* g, T* dx) {
  const std::int64_t row = blockIdx.x;
  const std::int64_t base = (row / r.inner) * r.len * r.inner + row % r.inner;
  double s = 0;
  for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x) {
    const std::int64_t i = base + k * r.inner;
    s += log ? static_cast<double>(g[i]) : static_cast<double>(g[i]) * static_cast<double>(y[i]);
  }
  s = block_sum(s);
  for (std::int64_t k = threadIdx.x; k < r.len; k += blockDim.x) {
    const std::int64_t i = base + k * r.inner;
    dx[i] = log ? static_cast<T>(g[i] - exp(static_cast<double>(y[i])) * s)
                : static_cast<T>(static_cast<double>(y[i]) * (static_cast<double>(g[i]) - s));
  }
}

}  // namespace

void softmax(const Launch& l, bool log, int axis, const Tensor& x, const Tensor* mask,
             const Tensor& out) {
  const Rows r = rows_of(out, axis);
  const auto blocks = static_cast<unsigned>(r.outer * r.inner);
  if (blocks == 0) return;
  Index<1> mix;
  if (mask != nullptr) {
    const Tensor* ins[1] = {mask};
    mix = index_for(out, ins);
  }
  const bool* m = mask ? static_cast<const bool*>(mask->data) : nullptr;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(softmax_kernel<double>, blocks, kThreads, 0, stream_of(l))
    (log, r, static_cast<const double*>(x.data), m, mix, static_cast<double*>(out.data));
  else
    STAG_LAUNCH(softmax_kernel<float>, blocks, kThreads, 0, stream_of(l))
    (log, r, static_cast<const float*>(x.data), m, mix, static_cast<float*>(out.data));
}

void softmax_backward(const Launch& l, bool log, int axis, const Tensor& y, const Tensor& g,
                      const Tensor& out) {
  const Rows r = rows_of(out, axis);
  const auto blocks = static_cast<unsigned>(r.outer * r.inner);
  if (blocks == 0) return;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(softmax_backward_kernel<double>, blocks, kThreads, 0, stream_of(l))
    (log, r, static_cast<const double*>(y.data), static_cast<const double*>(g.data),
     static_cast<double*>(out.data));
  else
    STAG_LAUNCH(softmax_backward_kernel<float>, blocks, kThreads, 0, stream_of(l))
    (log, r, static_cast<const float*>(y.data), static_cast<const float*>(g.data),
     static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

// CUDA kernel of cumsum: one thread per line along the axis, a running sum in the element type
// in the line's order (from the end with reverse_scan), so that the results equal the CPU's
// bit for bit (ops/cumsum/reference.cpp).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void cumsum_kernel(const T* x, std::int64_t lines, std::int64_t len, std::int64_t inner,
                              bool reverse, T* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < lines;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t base = (i / inner) * len * inner + i % inner;
    T acc = 0;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t at = base + (reverse ? len - 1 - k : k) * inner;
      // The first element is copied, not added to 0 (0 + -0 would be +0).
      acc = k == 0 ? x[at] : acc + x[at];
      out[at] = acc;
    }
  }
}

}  // namespace

void cumsum(const Launch& l, int axis, bool reverse, const Tensor& x, const Tensor& out) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dims[d];
  for (int d = axis + 1; d < x.rank; ++d) inner *= x.dims[d];
  const std::int64_t lines = outer * inner, len = x.dims[axis];
  if (lines == 0 || len == 0) return;
  if (x.dtype == Dt::f64)
    STAG_LAUNCH(cumsum_kernel<double>, blocks_for(lines), kThreads, 0, stream_of(l))
    (static_cast<const double*>(x.data), lines, len, inner, reverse,
     static_cast<double*>(out.data));
  else
    STAG_LAUNCH(cumsum_kernel<float>, blocks_for(lines), kThreads, 0, stream_of(l))
    (static_cast<const float*>(x.data), lines, len, inner, reverse, static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

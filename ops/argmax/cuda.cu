// CUDA kernel of argmax: one thread per output element scans its line along the axis, first
// index on ties, NaN wins, as the reference (ops/argmax/reference.cpp).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void argmax_kernel(const T* x, std::int64_t lines, std::int64_t len, std::int64_t inner,
                              std::int32_t* out) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < lines;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const T* row = x + (i / inner) * len * inner + i % inner;
    T best = row[0];
    std::int64_t at = 0;
    for (std::int64_t k = 1; k < len && best == best; ++k) {  // best != best: a NaN, which wins
      const T v = row[k * inner];
      if (v > best || v != v) {
        best = v;
        at = k;
      }
    }
    out[i] = static_cast<std::int32_t>(at);
  }
}

template <class T>
void run(const Launch& l, const Tensor& x, std::int64_t lines, std::int64_t len, std::int64_t inner,
         const Tensor& out) {
  STAG_LAUNCH(argmax_kernel<T>, blocks_for(lines), kThreads, 0, stream_of(l))
  (static_cast<const T*>(x.data), lines, len, inner, static_cast<std::int32_t*>(out.data));
}

}  // namespace

void argmax(const Launch& l, int axis, const Tensor& x, const Tensor& out) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dims[d];
  for (int d = axis + 1; d < x.rank; ++d) inner *= x.dims[d];
  const std::int64_t lines = outer * inner, len = x.dims[axis];
  if (lines == 0) return;
  switch (x.dtype) {
    case Dt::f64:
      return run<double>(l, x, lines, len, inner, out);
    case Dt::i32:
      return run<std::int32_t>(l, x, lines, len, inner, out);
    case Dt::i64:
      return run<std::int64_t>(l, x, lines, len, inner, out);
    default:
      return run<float>(l, x, lines, len, inner, out);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

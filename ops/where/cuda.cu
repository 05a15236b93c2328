// CUDA kernel of where: a broadcasting copy of elements of a or b (any dtype, by size).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class E>
__global__ void where_kernel(Index<3> ix, const bool* c, const E* a, const E* b, E* out,
                             std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[3];
    ix.offsets(i, off);
    out[i] = c[off[0]] ? a[off[1]] : b[off[2]];
  }
}

template <class E>
void run(const Launch& l, const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor* ins[3] = {&c, &a, &b};
  const std::int64_t n = numel(out);
  STAG_LAUNCH(where_kernel<E>, blocks_for(n), kThreads, 0, stream_of(l))
  (index_for(out, ins), static_cast<const bool*>(c.data), static_cast<const E*>(a.data),
   static_cast<const E*>(b.data), static_cast<E*>(out.data), n);
}

}  // namespace

void where(const Launch& l, const Tensor& c, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (out.dtype) {
    case Dt::f64:
    case Dt::i64:
      return run<std::uint64_t>(l, c, a, b, out);
    case Dt::bf16:
      return run<std::uint16_t>(l, c, a, b, out);
    case Dt::boolean:
      return run<std::uint8_t>(l, c, a, b, out);
    default:
      return run<std::uint32_t>(l, c, a, b, out);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

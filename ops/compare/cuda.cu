// CUDA kernels of lt, le, eq: operands read broadcast, compared in their own type (so i64
// beyond 2^53 compares exactly, as the reference's long double does).
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/op_list.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void compare_kernel(OpId op, Index<2> ix, const T* a, const T* b, bool* out,
                               std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    const T x = a[off[0]], y = b[off[1]];
    out[i] = op == OpId::lt ? x < y : (op == OpId::le ? x <= y : x == y);
  }
}

template <class T>
void run(const Launch& l, int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor* ins[2] = {&a, &b};
  const std::int64_t n = numel(out);
  STAG_LAUNCH(compare_kernel<T>, blocks_for(n), kThreads, 0, stream_of(l))
  (static_cast<OpId>(op), index_for(out, ins), static_cast<const T*>(a.data),
   static_cast<const T*>(b.data), static_cast<bool*>(out.data), n);
}

}  // namespace

void compare(const Launch& l, int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (a.dtype) {  // both operands have one dtype (the shape rule)
    case Dt::f64:
      return run<double>(l, op, a, b, out);
    case Dt::i32:
      return run<std::int32_t>(l, op, a, b, out);
    case Dt::i64:
      return run<std::int64_t>(l, op, a, b, out);
    case Dt::boolean:
      return run<bool>(l, op, a, b, out);
    default:
      return run<float>(l, op, a, b, out);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

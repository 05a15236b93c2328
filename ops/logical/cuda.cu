// CUDA kernels of logical_and, logical_or, logical_not: bools read broadcast.
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/op_list.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__global__ void logical_kernel(OpId op, Index<2> ix, const bool* a, const bool* b, bool* out,
                               std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    const bool x = a[off[0]];
    out[i] = op == OpId::logical_not   ? !x
             : op == OpId::logical_and ? (x && b[off[1]])
                                       : (x || b[off[1]]);
  }
}

}  // namespace

// logical_not passes its operand as both a and b.
void logical(const Launch& l, int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor* ins[2] = {&a, &b};
  const std::int64_t n = numel(out);
  STAG_LAUNCH(logical_kernel, blocks_for(n), kThreads, 0, stream_of(l))
  (static_cast<OpId>(op), index_for(out, ins), static_cast<const bool*>(a.data),
   static_cast<const bool*>(b.data), static_cast<bool*>(out.data), n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

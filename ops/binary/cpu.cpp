// CPU kernels of add, sub, mul, div, minimum, maximum: oneDNN binary primitives (f32). oneDNN
// broadcasts only its second source, so a commutative op with a broadcast first operand swaps
// them; the rare sub/div with a broadcast first operand falls back to the reference kernel.
#include <stag/ops/binary/binary.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {
namespace {

bool full_shape(const TensorView& v, const TensorView& out) {
  if (v.rank != out.rank) return false;
  for (int i = 0; i < v.rank; ++i)
    if (v.dims[i] != out.dims[i]) return false;
  return true;
}

std::unique_ptr<CpuKernel> binary(const CpuNode& n, dnnl::algorithm alg, bool commutative) {
  if (n.out.dtype != DType::f32) return nullptr;
  TensorView a = n.in[0], b = n.in[1];
  // In place over input 1 (planned only for commutative ops) or a broadcast input 0: swap.
  const bool swap = commutative && (!full_shape(a, n.out) || b.data == n.out.data);
  if (swap) std::swap(a, b);
  if (!full_shape(a, n.out)) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  const int r = std::max(1, n.out.rank);
  const TensorView bp = padded(b, r);
  try {
    dnnl::binary::primitive_desc pd(
        dnnl::binary::desc(alg, memory_desc(a), memory_desc(bp), memory_desc(n.out)), eng);
    return std::make_unique<OnednnKernel>(
        eng, make_primitive<dnnl::binary>(pd),
        std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC_0, memory_of(pd.src0_desc(), a, eng)},
                                              {DNNL_ARG_SRC_1, memory_of(pd.src1_desc(), bp, eng)},
                                              {DNNL_ARG_DST, memory_of(pd.dst_desc(), n.out, eng)}},
        "onednn binary (" + impl_name(pd) + ")");
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<CpuKernel> OpDef<OpId::add>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_add, true);
}
std::unique_ptr<CpuKernel> OpDef<OpId::sub>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_sub, false);
}
std::unique_ptr<CpuKernel> OpDef<OpId::mul>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_mul, true);
}
std::unique_ptr<CpuKernel> OpDef<OpId::div>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_div, false);
}
std::unique_ptr<CpuKernel> OpDef<OpId::minimum>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_min, true);
}
std::unique_ptr<CpuKernel> OpDef<OpId::maximum>::cpu(const CpuNode& n) {
  return binary(n, dnnl::algorithm::binary_max, true);
}

}  // namespace stag

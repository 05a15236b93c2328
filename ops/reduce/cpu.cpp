// CPU kernels of sum, mean and max: oneDNN reduction (f32) into the keepdim view of the output.
#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/reduce/reduce.hpp>

namespace stag {
namespace {

std::unique_ptr<CpuKernel> reduction(const CpuNode& n, dnnl::algorithm alg) {
  const TensorView& x = n.in[0];
  if (n.out.dtype != DType::f32 || !x.contiguous() || x.rank == 0) return nullptr;
  const auto mask = static_cast<std::uint32_t>(n.attr().i[0]);
  TensorView dst = x;  // the output seen with reduced dims kept as 1
  for (int d = 0; d < x.rank; ++d)
    if (mask & (1u << d)) dst.dims[d] = 1;
  dst.set_contiguous();
  dst.data = n.out.data;
  const dnnl::engine& eng = n.ctx.eng;
  try {
    dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, memory_desc(x), memory_desc(dst), 0.f, 0.f), eng);
    return std::make_unique<OnednnKernel>(eng, make_primitive<dnnl::reduction>(pd),
                                          std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(x, eng)},
                                                                                {DNNL_ARG_DST, memory_of(dst, eng)}},
                                          "onednn reduction (" + impl_name(pd) + ")");
  } catch (const dnnl::error&) {
    return nullptr;  // e.g. nothing reduced (oneDNN refuses identical shapes)
  }
}

}  // namespace

std::unique_ptr<CpuKernel> OpDef<OpId::sum>::cpu(const CpuNode& n) { return reduction(n, dnnl::algorithm::reduction_sum); }
std::unique_ptr<CpuKernel> OpDef<OpId::mean>::cpu(const CpuNode& n) { return reduction(n, dnnl::algorithm::reduction_mean); }
std::unique_ptr<CpuKernel> OpDef<OpId::max>::cpu(const CpuNode& n) { return reduction(n, dnnl::algorithm::reduction_max); }

}  // namespace stag

// CPU kernel of a materialised permute: a oneDNN reorder from the permuted strides of the input
// to the contiguous output. (A permute whose consumers read strides is no kernel at all.)
#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/permute/permute.hpp>

namespace stag {

std::unique_ptr<Kernel> OpDef<OpId::permute>::cpu(const KernelNode& n) {
  if (onednn_type(n.out.dtype) == dnnl::memory::data_type::undef || n.out.rank == 0) return nullptr;
  TensorView src = n.in[0];
  for (int k = 0; k < src.rank; ++k) {
    const int p = static_cast<int>(n.attr().i[k]);
    src.dims[k] = n.in[0].dims[p];
    src.strides[k] = n.in[0].strides[p];
  }
  const dnnl::engine& eng = n.ctx.eng;
  dnnl::memory s = memory_of(src, eng), d = memory_of(n.out, eng);
  dnnl::reorder::primitive_desc pd(s, d);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::reorder>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, d}},
      "onednn reorder (" + impl_name(pd) + ")");
}

}  // namespace stag

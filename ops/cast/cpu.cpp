// CPU kernel of cast between f32, bf16, i32 and bool(u8): a oneDNN reorder with conversion.
// NOTE: oneDNN's float -> int conversion rounds to nearest and saturates, while the reference
// truncates; casts to integers therefore stay on the reference kernel.
#include <stag/ops/cast/cast.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {

std::unique_ptr<CpuKernel> OpDef<OpId::cast>::cpu(const CpuNode& n) {
  const DType from = n.in[0].dtype, to = n.out.dtype;
  const bool floats =
      (from == DType::f32 || from == DType::bf16) && (to == DType::f32 || to == DType::bf16);
  const bool widen = (from == DType::boolean || from == DType::i32) && to == DType::f32;
  if (!(floats || widen) || n.out.rank == 0) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  dnnl::memory s = memory_of(n.in[0], eng), d = memory_of(n.out, eng);
  dnnl::reorder::primitive_desc pd(s, d);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::reorder>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, d}},
      "onednn reorder (" + impl_name(pd) + ")");
}

}  // namespace stag

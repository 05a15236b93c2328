// Reference kernels of the view ops: a contiguous copy (the data order does not change).
#include <cstring>

#include <stag/ops/kernel.hpp>
#include <stag/ops/reshape/reshape.hpp>

namespace stag {
namespace {
void copy_contiguous(const KernelArgs& a) {
  if (!a.in[0].contiguous())
    throw Error("stag: " + a.name() + ": reference view of a strided input");
  std::memcpy(a.out.data, a.in[0].data,
              static_cast<std::size_t>(a.out.numel()) * dtype_size(a.out.dtype));
}
}  // namespace

void OpDef<OpId::reshape>::reference(const KernelArgs& a) {
  copy_contiguous(a);
}
void OpDef<OpId::unsqueeze>::reference(const KernelArgs& a) {
  copy_contiguous(a);
}
void OpDef<OpId::squeeze>::reference(const KernelArgs& a) {
  copy_contiguous(a);
}

}  // namespace stag

// Reference kernel of permute: a gather over the permuted input strides.
#include <cstring>

#include <stag/ops/kernel.hpp>
#include <stag/ops/permute/permute.hpp>

namespace stag {

void OpDef<OpId::permute>::reference(const KernelArgs& a) {
  const TensorView& x = a.in[0];
  TensorView src = x;  // x read with permuted strides has the output's dims
  for (int k = 0; k < x.rank; ++k) {
    const int p = static_cast<int>(a.attr().i[k]);
    src.dims[k] = x.dims[p];
    src.strides[k] = x.strides[p];
  }
  const std::size_t es = dtype_size(a.out.dtype);
  const auto* in = static_cast<const unsigned char*>(x.data);
  auto* out = static_cast<unsigned char*>(a.out.data);
  const std::int64_t n = a.out.numel();
  for (std::int64_t i = 0; i < n; ++i)
    std::memcpy(out + i * static_cast<std::int64_t>(es),
                in + kernel::offset_of(src, i) * static_cast<std::int64_t>(es), es);
}

}  // namespace stag

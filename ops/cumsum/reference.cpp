// Reference kernel of cumsum: for each line along the axis, a sequential running sum (from the
// end with reverse_scan). The input may be strided; the output is contiguous.
#include <cstdint>

#include <stag/ops/cumsum/cumsum.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

void OpDef<OpId::cumsum>::reference(const KernelArgs& a) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const bool reverse = a.attr().i[1] != 0;
  const TensorView& x = a.in[0];
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= a.out.dims[d];
  for (int d = axis + 1; d < a.out.rank; ++d) inner *= a.out.dims[d];
  const std::int64_t len = a.out.dims[axis];
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.as<const T>();
    T* out = a.out.as<T>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t c = 0; c < inner; ++c)
        for (std::int64_t k = 0; k < len; ++k) {
          const std::int64_t r = reverse ? len - 1 - k : k;
          const std::int64_t flat = (o * len + r) * inner + c;
          const T v = in[kernel::offset_of(x, flat)];
          // The first element is copied, not added to 0 (0 + -0 would be +0).
          out[flat] = k == 0 ? v : out[flat + (reverse ? inner : -inner)] + v;
        }
  });
}

}  // namespace stag

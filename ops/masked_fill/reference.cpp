// Reference kernel of masked_fill: x copied, then the value stored where the broadcast mask is
// true (kernel::store rounds, saturates and maps NaN to 0 for integer x: no UB on any value).
#include <cstring>

#include <stag/ops/kernel.hpp>
#include <stag/ops/masked_fill/masked_fill.hpp>

namespace stag {

void OpDef<OpId::masked_fill>::reference(const KernelArgs& a) {
  const double value = a.attr().f[0];
  const TensorView* ins[2] = {&a.in[0], &a.in[1]};
  const auto* x = static_cast<const unsigned char*>(a.in[0].data);
  const bool* mask = a.in[1].as<const bool>();
  auto* out = static_cast<unsigned char*>(a.out.data);
  const auto es = static_cast<std::int64_t>(dtype_size(a.out.dtype));
  kernel::for_each_broadcast<2>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
    if (mask[off[1]])
      kernel::store(a.out, i, value);
    else
      std::memcpy(out + i * es, x + off[0] * es, static_cast<std::size_t>(es));
  });
}

}  // namespace stag

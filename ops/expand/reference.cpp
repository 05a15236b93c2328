// Reference kernel of expand: a broadcasting copy.
#include <cstring>

#include <stag/ops/expand/expand.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

void OpDef<OpId::expand>::reference(const KernelArgs& a) {
  const TensorView* ins[1] = {&a.in[0]};
  const std::size_t es = dtype_size(a.out.dtype);
  const auto* in = static_cast<const unsigned char*>(a.in[0].data);
  auto* out = static_cast<unsigned char*>(a.out.data);
  kernel::for_each_broadcast<1>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
    std::memcpy(out + i * static_cast<std::int64_t>(es),
                in + off[0] * static_cast<std::int64_t>(es), es);
  });
}

}  // namespace stag

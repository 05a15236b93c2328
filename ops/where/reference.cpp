// Reference kernel of where: a broadcasting byte copy from a or b, for any dtype.
#include <cstring>

#include <stag/ops/kernel.hpp>
#include <stag/ops/where/where.hpp>

namespace stag {

void OpDef<OpId::where>::reference(const KernelArgs& a) {
  const TensorView* ins[3] = {&a.in[0], &a.in[1], &a.in[2]};
  const bool* cond = a.in[0].as<const bool>();
  const auto* x = static_cast<const unsigned char*>(a.in[1].data);
  const auto* y = static_cast<const unsigned char*>(a.in[2].data);
  auto* out = static_cast<unsigned char*>(a.out.data);
  const auto es = static_cast<std::int64_t>(dtype_size(a.out.dtype));
  kernel::for_each_broadcast<3>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
    const unsigned char* src = cond[off[0]] ? x + off[1] * es : y + off[2] * es;
    std::memcpy(out + i * es, src, static_cast<std::size_t>(es));
  });
}

}  // namespace stag

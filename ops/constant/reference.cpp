// Reference kernel of constant: fill with attrs.f[0].
#include <stag/ops/constant/constant.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

void OpDef<OpId::constant>::reference(const KernelArgs& a) {
  const std::int64_t n = a.out.numel();
  for (std::int64_t i = 0; i < n; ++i) kernel::store(a.out, i, a.attr().f[0]);
}

}  // namespace stag

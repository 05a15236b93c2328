// Reference kernel of positions: start, start + 1, ...
#include <stag/ops/kernel.hpp>
#include <stag/ops/positions/positions.hpp>

namespace stag {

void OpDef<OpId::positions>::reference(const KernelArgs& a) {
  const std::int64_t n = a.out.numel();
  for (std::int64_t i = 0; i < n; ++i)
    kernel::store(a.out, i, static_cast<double>(a.attr().i[0] + i));
}

}  // namespace stag

// Reference kernel of numel: the product of the counted dims.
#include <stag/ops/kernel.hpp>
#include <stag/ops/numel/numel.hpp>

namespace stag {

void OpDef<OpId::numel>::reference(const KernelArgs& a) {
  double n = 1;
  const auto mask = static_cast<std::uint32_t>(a.attr().i[0]);
  for (int d = 0; d < a.in[0].rank; ++d)
    if (mask & (1u << d)) n *= static_cast<double>(a.in[0].dims[d]);
  kernel::store(a.out, 0, n);
}

}  // namespace stag

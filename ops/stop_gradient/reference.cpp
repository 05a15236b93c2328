// Reference kernel of stop_gradient: a copy.
#include <cstring>

#include <stag/ops/kernel.hpp>
#include <stag/ops/stop_gradient/stop_gradient.hpp>

namespace stag {

void OpDef<OpId::stop_gradient>::reference(const KernelArgs& a) {
  std::memcpy(a.out.data, a.in[0].data,
              static_cast<std::size_t>(a.out.numel()) * dtype_size(a.out.dtype));
}

}  // namespace stag

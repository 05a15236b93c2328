// Reference kernel of cast: element by element through a long double, which holds every
// source value exactly, so each element is rounded once (to bf16, to f32 from i64, ...).
#include <stag/ops/cast/cast.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

void OpDef<OpId::cast>::reference(const KernelArgs& a) {
  const std::int64_t n = a.out.numel();
  for (std::int64_t i = 0; i < n; ++i)
    kernel::store_exact(a.out, i, kernel::load_exact(a.in[0], kernel::offset_of(a.in[0], i)));
}

}  // namespace stag

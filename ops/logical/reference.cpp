// Reference kernels of logical_and, logical_or, logical_not: broadcasting loops over bools.
#include <stag/ops/kernel.hpp>
#include <stag/ops/logical/logical.hpp>

namespace stag {
namespace {
template <class Fn>
void logical(const KernelArgs& a, Fn fn) {
  const TensorView* ins[2] = {&a.in[0], &a.in[1]};
  const bool* x = a.in[0].as<const bool>();
  const bool* y = a.in[1].as<const bool>();
  bool* out = a.out.as<bool>();
  kernel::for_each_broadcast<2>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
    out[i] = fn(x[off[0]], y[off[1]]);
  });
}
}  // namespace

void OpDef<OpId::logical_and>::reference(const KernelArgs& a) {
  logical(a, [](bool x, bool y) { return x && y; });
}
void OpDef<OpId::logical_or>::reference(const KernelArgs& a) {
  logical(a, [](bool x, bool y) { return x || y; });
}
void OpDef<OpId::logical_not>::reference(const KernelArgs& a) {
  const bool* x = a.in[0].as<const bool>();
  bool* out = a.out.as<bool>();
  const std::int64_t n = a.out.numel();
  for (std::int64_t i = 0; i < n; ++i) out[i] = !x[i];
}

}  // namespace stag

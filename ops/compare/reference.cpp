// Reference kernels of lt, le, eq: broadcasting loops over values read exactly (as long
// double: i64 beyond 2^53 would round in a double and compare equal to its neighbours).
#include <stag/ops/compare/compare.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace {
template <class Fn>
void compare(const KernelArgs& a, Fn fn) {
  const TensorView* ins[2] = {&a.in[0], &a.in[1]};
  bool* out = a.out.as<bool>();
  kernel::for_each_broadcast<2>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
    out[i] = fn(kernel::load_exact(a.in[0], off[0]), kernel::load_exact(a.in[1], off[1]));
  });
}
}  // namespace

void OpDef<OpId::lt>::reference(const KernelArgs& a) {
  compare(a, [](long double x, long double y) { return x < y; });
}
void OpDef<OpId::le>::reference(const KernelArgs& a) {
  compare(a, [](long double x, long double y) { return x <= y; });
}
void OpDef<OpId::eq>::reference(const KernelArgs& a) {
  compare(a, [](long double x, long double y) { return x == y; });
}

}  // namespace stag

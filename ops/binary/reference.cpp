// Reference kernels of add, sub, mul, div: broadcasting loops in the output's dtype.
#include <cstdint>

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace {
template <class Fn>
void binary(const KernelArgs& a, Fn fn) {
  const TensorView* ins[2] = {&a.in[0], &a.in[1]};
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.in[0].as<const T>();
    const T* y = a.in[1].as<const T>();
    T* out = a.out.as<T>();
    kernel::for_each_broadcast<2>(a.out, ins, [&](std::int64_t i, const std::int64_t* off) {
      out[i] = fn(x[off[0]], y[off[1]]);
    });
  };
  switch (a.out.dtype) {
    case DType::f32: run(float{}); break;
    case DType::f64: run(double{}); break;
    case DType::i32: run(std::int32_t{}); break;
    case DType::i64: run(std::int64_t{}); break;
    default: throw Error("stag: " + a.name() + ": unsupported dtype for arithmetic");
  }
}
}  // namespace

void OpDef<OpId::add>::reference(const KernelArgs& a) { binary(a, [](auto x, auto y) { return x + y; }); }
void OpDef<OpId::sub>::reference(const KernelArgs& a) { binary(a, [](auto x, auto y) { return x - y; }); }
void OpDef<OpId::mul>::reference(const KernelArgs& a) { binary(a, [](auto x, auto y) { return x * y; }); }
void OpDef<OpId::div>::reference(const KernelArgs& a) { binary(a, [](auto x, auto y) { return x / y; }); }

}  // namespace stag

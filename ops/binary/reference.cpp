// Reference kernels of add, sub, mul, div, minimum, maximum: broadcasting loops in the output's
// dtype. Integers wrap around on overflow (as in PyTorch) and integer division truncates toward
// zero; a zero divisor is a stag::Error, never undefined behaviour.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/binary/math.hpp>
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
      out[i] = fn(x[off[0]], y[off[1]], i);
    });
  };
  switch (a.out.dtype) {
    case DType::f32:
      run(float{});
      break;
    case DType::f64:
      run(double{});
      break;
    case DType::i32:
      run(std::int32_t{});
      break;
    case DType::i64:
      run(std::int64_t{});
      break;
    default:
      throw Error("stag: " + a.name() + ": unsupported dtype for arithmetic");
  }
}

// Integer add/sub/mul in the unsigned type: wraps modulo 2^bits (signed overflow is UB).
template <class T, class Op>
T wrapping(T x, T y, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(x), static_cast<U>(y)));
  } else {
    return op(x, y);
  }
}

template <class T>
T divide(const KernelArgs& a, T x, T y, std::int64_t i) {
  if constexpr (std::is_integral_v<T>) {
    if (y == 0)
      throw Error("stag: " + a.name() + ": integer division by zero at output element " +
                  std::to_string(i));
    if (y == T(-1)) return wrapping(T(0), x, [](auto p, auto q) { return p - q; });  // min / -1
  }
  return x / y;
}
}  // namespace

void OpDef<OpId::add>::reference(const KernelArgs& a) {
  binary(a, [](auto x, auto y, std::int64_t) {
    return wrapping(x, y, [](auto p, auto q) { return p + q; });
  });
}
void OpDef<OpId::sub>::reference(const KernelArgs& a) {
  binary(a, [](auto x, auto y, std::int64_t) {
    return wrapping(x, y, [](auto p, auto q) { return p - q; });
  });
}
void OpDef<OpId::mul>::reference(const KernelArgs& a) {
  binary(a, [](auto x, auto y, std::int64_t) {
    return wrapping(x, y, [](auto p, auto q) { return p * q; });
  });
}
void OpDef<OpId::div>::reference(const KernelArgs& a) {
  binary(a, [&](auto x, auto y, std::int64_t i) { return divide(a, x, y, i); });
}
void OpDef<OpId::minimum>::reference(const KernelArgs& a) {
  binary(a, [](auto x, auto y, std::int64_t) { return binary_math::minimum(x, y); });
}
void OpDef<OpId::maximum>::reference(const KernelArgs& a) {
  binary(a, [](auto x, auto y, std::int64_t) { return binary_math::maximum(x, y); });
}

}  // namespace stag

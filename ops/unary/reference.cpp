// Reference kernels of the unary ops and of unary_backward (formulas in math.hpp).
#include <cstdint>
#include <type_traits>

#include <stag/ops/kernel.hpp>
#include <stag/ops/unary/math.hpp>
#include <stag/ops/unary/unary.hpp>

namespace stag {
namespace {
// neg and abs on integers, exact in the integer type. NOTE: -INT_MIN does not exist; like
// PyTorch the result wraps to INT_MIN (computed in the unsigned type, never signed overflow).
template <class T>
void integer_forward(const KernelArgs& a, OpId op) {
  using U = std::make_unsigned_t<T>;
  const TensorView& x = a.in[0];
  const T* in = x.as<const T>();
  T* out = a.out.as<T>();
  for (std::int64_t i = 0, n = a.out.numel(); i < n; ++i) {
    const T v = in[kernel::offset_of(x, i)];
    const T negated = static_cast<T>(U(0) - static_cast<U>(v));
    out[i] = op == OpId::neg || v < 0 ? negated : v;
  }
}

// Integer remainder with the sign of m (torch.remainder); m != 0 is checked at graph building.
// NOTE: x % -1 overflows for the type's minimum (undefined behaviour); every remainder by -1 or
// 1 is 0.
template <class T>
void integer_mod(const KernelArgs& a) {
  const T m = static_cast<T>(a.attr().i[0]);
  const TensorView& x = a.in[0];
  const T* in = x.as<const T>();
  T* out = a.out.as<T>();
  for (std::int64_t i = 0, n = a.out.numel(); i < n; ++i) {
    if (m == T(-1) || m == T(1)) {
      out[i] = 0;
      continue;
    }
    const T r = static_cast<T>(in[kernel::offset_of(x, i)] % m);
    out[i] = r != 0 && ((r < 0) != (m < 0)) ? static_cast<T>(r + m) : r;
  }
}

void forward(const KernelArgs& a, OpId op) {
  const double p = a.attr().f[0], q = a.attr().f[1];
  const TensorView& x = a.in[0];
  const std::int64_t n = a.out.numel();
  if (op == OpId::mod && a.out.dtype == DType::i32) return integer_mod<std::int32_t>(a);
  if (op == OpId::mod && a.out.dtype == DType::i64) return integer_mod<std::int64_t>(a);
  if (a.out.dtype == DType::i32) return integer_forward<std::int32_t>(a, op);
  if (a.out.dtype == DType::i64) return integer_forward<std::int64_t>(a, op);
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = a.out.as<T>();
    const T* in = x.as<const T>();
    for (std::int64_t i = 0; i < n; ++i)
      out[i] = unary_math::forward(op, in[kernel::offset_of(x, i)], p, q);
  });
}
}  // namespace

#define STAG_UNARY_REF(id)                               \
  void OpDef<OpId::id>::reference(const KernelArgs& a) { \
    forward(a, OpId::id);                                \
  }
STAG_UNARY_REF(neg)
STAG_UNARY_REF(exp)
STAG_UNARY_REF(log)
STAG_UNARY_REF(sqrt)
STAG_UNARY_REF(rsqrt)
STAG_UNARY_REF(pow_scalar)
STAG_UNARY_REF(abs)
STAG_UNARY_REF(relu)
STAG_UNARY_REF(gelu)
STAG_UNARY_REF(gelu_tanh)
STAG_UNARY_REF(silu)
STAG_UNARY_REF(sigmoid)
STAG_UNARY_REF(tanh)
STAG_UNARY_REF(sin)
STAG_UNARY_REF(cos)
STAG_UNARY_REF(elu)
STAG_UNARY_REF(floor)
STAG_UNARY_REF(clamp)
STAG_UNARY_REF(mod)
#undef STAG_UNARY_REF

void OpDef<OpId::unary_backward>::reference(const KernelArgs& a) {
  const auto op = static_cast<OpId>(a.attr().i[0]);
  const double p = a.attr().f[0], q = a.attr().f[1];
  const std::int64_t n = a.out.numel();
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.in[0].as<const T>();
    const T* y = a.in[1].as<const T>();
    const T* g = a.in[2].as<const T>();
    T* out = a.out.as<T>();
    for (std::int64_t i = 0; i < n; ++i) out[i] = unary_math::backward(op, x[i], y[i], g[i], p, q);
  });
}

}  // namespace stag

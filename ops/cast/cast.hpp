// cast: convert to another dtype. Floats round to nearest even, once (f64 -> bf16 and
// i64 -> f32 do not go through an intermediate type); float to int truncates toward zero and
// saturates at the type's limits, NaN -> 0; int to a narrower int saturates; bool is 1/0 and
// anything nonzero (NaN too) casts to true. PyTorch: x.to(dtype) (which wraps out-of-range
// values instead of saturating).
//   cast<f32>(keep [B, S] bool) -> [B, S] f32
// Gradient: cast back to the input's dtype (only between float types; none into ints).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::cast> {
  static constexpr OpInfo info{"cast", "cast", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

constexpr Ref cast(Ref x, DType to) {
  if (x.dtype() == to) return x;
  return emit(OpId::cast, "cast", {x}, shape_ok(x.shape(), to));
}

template <DType To, class S, DType T>
constexpr auto cast(Tensor<S, T> x) {
  return Tensor<S, To>{x.b, cast(x.ref(), To).id};
}

constexpr void OpDef<OpId::cast>::vjp(VjpCtx& c) {
  if (is_float(c.x(0).dtype())) c.grads[0] = cast(c.g(), c.x(0).dtype());
}

}  // namespace stag

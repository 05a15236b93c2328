// stop_gradient: the identity in the forward pass; no gradient flows back through it.
//   stop_gradient(x [B, S, D]) -> [B, S, D]
// Everything upstream of it gets no gradient from this path (a parameter used only through it
// gets a zero gradient). Use it for targets built from the model's own outputs, or to wrap
// the input of an op without a VJP. PyTorch: x.detach(); JAX: jax.lax.stop_gradient(x).
// No attrs; info.no_grad marks its input, so the autodiff pass never asks it for a VJP.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::stop_gradient> {
  static constexpr OpInfo info{"stop_gradient", "stop∇", 1, 0b1};
  static void reference(const KernelArgs&);
};

constexpr Ref stop_gradient(Ref x) {
  return emit(OpId::stop_gradient, "stop_gradient", {x}, shape_ok(x.shape(), x.dtype()));
}

template <class S, DType T>
constexpr auto stop_gradient(Tensor<S, T> x) {
  return Tensor<S, T>{x.b, stop_gradient(x.ref()).id};
}

}  // namespace stag

// dropout: in training mode (RunState.training) each element is zeroed with probability p and
// the others are scaled by 1 / (1 - p); in eval mode it is the identity.
//   dropout(x [B, S, D], 0.1) -> [B, S, D]
// The mask comes from the counter-based RNG (ops/random.hpp) keyed by (RunState.seed,
// RunState.step, the node's salt, the element's flat index): it never depends on scheduling,
// and the backward pass regenerates it instead of storing it. The salt is the builder's node
// count when the dropout is created, so each dropout node of a model draws its own mask.
// p must be in [0, 1): inside stag::model(...) a bad p stops compilation with that message,
// in a graph built at run time it throws GraphError. Input: f32 or f64.
// PyTorch: F.dropout(x, p, training). Attrs: f[0] = p, i[0] = salt.
// Gradient: the same dropout (same p and salt) applied to g, which regenerates the same mask.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::dropout> {
  static constexpr OpInfo info{"dropout", "dropout", 1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
  static constexpr std::uint8_t in_place = 0b1;
};

namespace rules {
constexpr ShapeResult dropout(const ShapeV& x, DType t) {
  if (t != DType::f32 && t != DType::f64) return shape_fail(ShapeErr::dtype);
  return shape_ok(x, t);
}
}  // namespace rules

// Dropout with an explicit salt: the VJP uses it to repeat its forward node's mask.
constexpr Ref dropout(Ref x, double p, std::int64_t salt) {
  // NOTE: written as !(p >= 0 && p < 1) so that a NaN p is refused too.
  if (!(p >= 0.0 && p < 1.0))
    throw GraphError("stag::dropout: p must be in [0, 1) (the probability of zeroing an element)");
  Attrs a;
  a.f[0] = p;
  a.i[0] = salt;
  return emit(OpId::dropout, "dropout", {x}, rules::dropout(x.shape(), x.dtype()), &a);
}
constexpr Ref dropout(Ref x, double p) {
  return dropout(x, p, x.b->size());
}

template <class S, DType T>
constexpr auto dropout(Tensor<S, T> x, double p) {
  static_assert(rules::dropout(S::value, T).ok(),
                "stag::dropout: input must be floating point (f32 or f64)");
  return Tensor<S, T>{x.b, dropout(x.ref(), p).id};
}

}  // namespace stag

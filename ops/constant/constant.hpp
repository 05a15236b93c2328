// constant (full): a tensor filled with one value. PyTorch: torch.full(shape, value).
//   stag::full<Shape<batch, 1>>(g, 0.5) -> Tensor<[batch, 1]>;  x * 0.5 makes a [] constant.
// Attrs: f[0] = the value.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::constant> {
  static constexpr OpInfo info{"constant", "const", 0};
  static void reference(const KernelArgs&);
};

// Untyped: a constant of any shape and dtype.
constexpr Ref full(Builder& g, const ShapeV& shape, double value, DType t = DType::f32) {
  Attrs a;
  a.f[0] = value;
  return Ref{&g, g.add(code(OpId::constant), {}, shape, t, &a, "const")};
}
constexpr Ref scalar(Builder& g, double value, DType t = DType::f32) {
  return full(g, ShapeV{}, value, t);
}

template <class S, DType T = DType::f32>
constexpr auto full(Builder& g, double value) {
  static_assert(ShapeType<S>, "stag::full: the template argument must be a stag::Shape<...>");
  using C = canonical_t<S>;
  register_syms<C>(g);
  return Tensor<C, T>{&g, full(g, C::value, value, T).id};
}

}  // namespace stag

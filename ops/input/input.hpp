// input: a named graph input, bound by the caller at run time (a forward() argument in PyTorch).
//   stag::input<"ids", Shape<batch, seq>, i32>(g) -> Tensor<[batch, seq], i32>
// Its symbols are bound from the tensor the caller passes (runtime/bind.hpp).
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::input> {
  static constexpr OpInfo info{"input", "input", 0};
  static void reference(const KernelArgs&);
};

// `role`: for a bool token mask, its polarity (keep_input, padding_input); kept in the node's
// attrs (i[0]) so that a session can refuse an array of the other polarity (runtime/bind.cpp).
template <fixed_string Name, class S, DType T = DType::f32>
constexpr auto input(Builder& g, MaskRole role = MaskRole::none) {
  static_assert(ShapeType<S>,
                "stag::input: the second template argument must be a stag::Shape<...>");
  using C = canonical_t<S>;
  register_syms<C>(g);
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(role);
  const int id = g.add(code(OpId::input), {}, C::value, T, role == MaskRole::none ? nullptr : &a,
                       Name.view(), kFlagInput);
  // Inputs live at the root whatever the current scope, so their names are what callers bind.
  g.nodes[static_cast<std::size_t>(id)].scope = 0;
  return Tensor<C, T>{&g, id};
}

}  // namespace stag

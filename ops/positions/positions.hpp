// positions (arange): the integers start, start+1, ... along one dim. PyTorch: torch.arange(n).
//   stag::positions<seq>(g) -> Tensor<[seq], i32>
// Attrs: i[0] = start. Feeds learned positional embeddings and sinusoidal tables.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::positions> {
  static constexpr OpInfo info{"positions", "arange", 0};
  static void reference(const KernelArgs&);
};

constexpr Ref positions(Builder& g, const DimV& n, std::int64_t start = 0) {
  Attrs a;
  a.i[0] = start;
  return Ref{&g, g.add(code(OpId::positions), {}, make_shape({n}), DType::i32, &a, "positions")};
}

template <auto N>
constexpr auto positions(Builder& g, std::int64_t start = 0) {
  using C = canonical_t<Shape<N>>;
  register_syms<C>(g);
  return Tensor<C, DType::i32>{&g, positions(g, C::value.dims[0], start).id};
}

}  // namespace stag

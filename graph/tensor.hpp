// Handles to graph nodes. Tensor<Shape, DType> carries its shape and dtype in its type so that
// ops check shapes with static_assert; Ref is the untyped handle used by graph passes (autodiff).
#pragma once

#include <stag/graph/builder.hpp>
#include <stag/graph/shape.hpp>

namespace stag {

// Untyped handle: a node index and the builder that owns it.
struct Ref {
  Builder* b = nullptr;
  std::int32_t id = -1;

  // By value: a reference into the builder's shape table dangles as soon as a new node adds a
  // shape (the table is a vector), e.g. in `sum_to(g * x(1), x(0).shape())`.
  constexpr ShapeV shape() const { return b->shape(id); }
  constexpr DType dtype() const { return b->dtype(id); }
  constexpr int rank() const { return b->shape(id).rank; }  // no copy of the shape
  constexpr bool valid() const { return b != nullptr && id >= 0; }
};

template <class S, DType T = DType::f32>
struct Tensor {
  using shape_type = S;
  static constexpr DType dtype = T;
  static constexpr int rank = S::rank;

  Builder* b = nullptr;
  std::int32_t id = -1;

  constexpr Ref ref() const { return Ref{b, id}; }
  // Gives the node a name within its scope (for lookup, pictures and attention inspection).
  constexpr Tensor named(std::string_view leaf) const {
    b->set_leaf(id, leaf);
    return *this;
  }
  // Makes the node a named graph output (readable after a run, kept by the planner).
  constexpr Tensor output(std::string_view name) const {
    b->add_output(id, name);
    return *this;
  }
  static std::string shape_string() { return stag::shape_string<S>(); }
};

template <class T>
struct is_tensor : std::false_type {};
template <class S, DType T>
struct is_tensor<Tensor<S, T>> : std::true_type {};
template <class T>
concept TensorHandle = is_tensor<std::remove_cvref_t<T>>::value;

// Records the names of the symbols of shape S in the graph (so they can be printed and bound),
// and those of its named static dims (printed only: they need no binding).
template <class S>
constexpr void register_syms(Builder& b) {
  []<auto... Ss>(Builder & bb, SymList<Ss...>) {
    ((NamedDim<decltype(Ss)> ? bb.add_dim_name(std::remove_cvref_t<decltype(Ss)>::id,
                                               std::remove_cvref_t<decltype(Ss)>::name)
                             : bb.add_sym(std::remove_cvref_t<decltype(Ss)>::id,
                                          std::remove_cvref_t<decltype(Ss)>::name)),
     ...);
  }
  (b, syms_of_t<S>{});
}

// The typed handle for an untyped result whose shape a typed rule has computed as V.
template <ShapeV V, DType T, class... InShapes>
constexpr auto typed(Ref r) {
  return Tensor<shape_t<V, syms_of_t<InShapes...>>, T>{r.b, r.id};
}

}  // namespace stag

// concat: joins 2 to 6 tensors along one axis.
//   concat<-1>(a [B, S, 3], b [B, S, 5]) -> [B, S, 8]
//   concat<0>(past [seq, D], now [seq, D]) -> [2*seq, D]
//   concat<0>(a [seq, D], b [2*seq, D]) -> [3*seq, D]
// All inputs have the same rank and dtype, and equal dims except along the axis. The axis
// dims add up when they are all numbers, or all multiples of the same symbols (k*d + m*d =
// (k+m)*d); seq + kv_seq or seq + 5 is not one dim and does not compile.
// PyTorch: torch.cat([a, b, ...], dim). Attrs: i[0] = axis (normalised).
// Gradient: each input gets its part of g through concat_backward, whose offsets are computed
// from the bound shapes at run time (attrs: i[0] = axis, i[1] = input number k, i[2] = sum of
// the axis coefficients of inputs 0..k-1, i[3] = sum of all of them), so a symbolic axis works.
#pragma once

#include <span>
#include <tuple>

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::concat> {
  static constexpr OpInfo info{"concat", "concat", -1};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
};
template <>
struct OpDef<OpId::concat_backward> {
  static constexpr OpInfo info{"concat_backward", "dconcat", 1};
  static void reference(const KernelArgs&);
};

namespace rules {
constexpr ShapeResult concat(const ShapeV* parts, const DType* types, int n, int axis) {
  if (n < 2 || n > kMaxInputs) return shape_fail(ShapeErr::arity);
  for (int k = 1; k < n; ++k)
    if (types[k] != types[0]) return shape_fail(ShapeErr::dtype);
  return algebra::concat(parts, n, axis, types[0]);
}
}  // namespace rules

constexpr Ref concat(std::span<const Ref> parts, int axis) {
  ShapeV shapes[kMaxInputs] = {};
  DType types[kMaxInputs] = {};
  int ids[kMaxInputs] = {};
  const int n = static_cast<int>(parts.size());
  if (n < 2 || n > kMaxInputs) raise_shape_error(ShapeErr::arity);
  for (int k = 0; k < n; ++k) {
    shapes[k] = parts[static_cast<std::size_t>(k)].shape();
    types[k] = parts[static_cast<std::size_t>(k)].dtype();
    ids[k] = parts[static_cast<std::size_t>(k)].id;
  }
  const ShapeResult r = rules::concat(shapes, types, n, axis);
  raise_shape_error(r.err);
  Attrs a;
  a.i[0] = normalize_axis(axis, shapes[0].rank);
  Builder* b = parts[0].b;
  return Ref{b, b->add(code(OpId::concat), std::span<const int>(ids, static_cast<std::size_t>(n)),
                       r.shape, r.dtype, &a, "concat")};
}
constexpr Ref concat(std::initializer_list<Ref> parts, int axis) {
  return concat(std::span<const Ref>(parts.begin(), parts.size()), axis);
}

// Input k's part of g: `part` is input k's shape; `prefix` and `total` are sums of the axis
// coefficients (see the header comment), from which the kernel finds the offset.
constexpr Ref concat_backward(Ref g, const ShapeV& part, int axis, int k, std::int64_t prefix,
                              std::int64_t total) {
  Attrs a;
  a.i[0] = normalize_axis(axis, part.rank);
  a.i[1] = k;
  a.i[2] = prefix;
  a.i[3] = total;
  return emit(OpId::concat_backward, "concat_backward", {g}, shape_ok(part, g.dtype()), &a);
}

template <int Axis, class... Ss, DType... Ts>
constexpr auto concat(Tensor<Ss, Ts>... xs) {
  static_assert(sizeof...(xs) >= 2 && sizeof...(xs) <= kMaxInputs,
                "stag::concat: give 2 to 6 tensors (concatenate in steps for more)");
  constexpr ShapeV shapes[sizeof...(xs) + 1] = {Ss::value...};
  constexpr DType types[sizeof...(xs) + 1] = {Ts...};
  constexpr ShapeResult r = rules::concat(shapes, types, sizeof...(xs), Axis);
  // The error shows the first input and the first one that does not concatenate with it.
  constexpr int bad = [&] {
    for (int k = 1; k < int{sizeof...(xs)}; ++k) {
      const ShapeV pair[2] = {shapes[0], shapes[k]};
      const DType pair_types[2] = {types[0], types[k]};
      if (!rules::concat(pair, pair_types, 2, Axis).ok()) return k;
    }
    return 1;
  }();
  using First = std::tuple_element_t<0, std::tuple<Ss...>>;
  using Bad = std::tuple_element_t<static_cast<std::size_t>(bad), std::tuple<Ss...>>;
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::concat: all inputs must have the same dtype",
                   with_dtype<First, types[0]>, with_dtype<Bad, types[bad]>);
  STAG_SHAPE_CHECK(r.err != ShapeErr::axis, "stag::concat: axis out of range for the inputs' rank",
                   First, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank, "stag::concat: all inputs must have the same rank",
                   First, Bad);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::concat_dims,
      "stag::concat: the inputs' dims differ outside the concat axis (they must be equal)", First,
      Bad);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::concat_symbolic,
      "stag::concat: the sizes along the axis do not add up to one dim: they must all be "
      "numbers, or multiples of the same symbols (seq + seq = 2*seq; seq + 5 is not a dim)",
      First, Bad);
  const Ref refs[sizeof...(xs) + 1] = {xs.ref()...};
  if constexpr (r.ok())
    return typed<r.shape, r.dtype, Ss...>(concat(std::span<const Ref>(refs, sizeof...(xs)), Axis));
  else
    return [](auto first, auto...) { return first; }(xs...);  // one mistake, one error
}

}  // namespace stag

// Gradients of sum, mean and max. sum: the gradient expanded back over the reduced axes; mean:
// the same divided by the reduced element count (numel, symbolic sizes allowed); max: the
// gradient routed to every position equal to the maximum (ties share it in full, like amax's
// subgradient up to scale: a known kink that gradcheck avoids with distinct values).
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/cast/cast.hpp>
#include <stag/ops/compare/compare.hpp>
#include <stag/ops/expand/expand.hpp>
#include <stag/ops/numel/numel.hpp>
#include <stag/ops/reduce/reduce.hpp>
#include <stag/ops/reshape/reshape.hpp>

namespace stag {

namespace detail {
// The reduced value (or its gradient) viewed with the reduced axes kept as 1s.
constexpr Ref keepdim_view(Ref v, const ShapeV& x, std::uint32_t mask) {
  return reshape(v, algebra::reduce(x, mask, true, v.dtype()).shape);
}
}  // namespace detail

constexpr void OpDef<OpId::sum>::vjp(VjpCtx& c) {
  const auto mask = static_cast<std::uint32_t>(c.attr().i[0]);
  c.grads[0] = expand(detail::keepdim_view(c.g(), c.x(0).shape(), mask), c.x(0).shape());
}
constexpr void OpDef<OpId::mean>::vjp(VjpCtx& c) {
  const auto mask = static_cast<std::uint32_t>(c.attr().i[0]);
  const Ref g = detail::keepdim_view(c.g(), c.x(0).shape(), mask);
  c.grads[0] = expand(g / numel(c.x(0), mask, c.g().dtype()), c.x(0).shape());
}
constexpr void OpDef<OpId::max>::vjp(VjpCtx& c) {
  const auto mask = static_cast<std::uint32_t>(c.attr().i[0]);
  const ShapeV& xs = c.x(0).shape();
  const Ref hit = cast(eq(c.x(0), detail::keepdim_view(c.y(), xs, mask)), c.g().dtype());
  c.grads[0] = hit * detail::keepdim_view(c.g(), xs, mask);
}

}  // namespace stag

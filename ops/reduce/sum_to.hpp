// sum_to: sums a gradient over the dims along which a value of shape `target` was broadcast,
// then views it as `target`. Used by the VJP of every broadcasting op.
#pragma once

#include <stag/ops/reduce/reduce.hpp>
#include <stag/ops/reshape/reshape.hpp>

namespace stag {

constexpr Ref sum_to(Ref g, const ShapeV& target) {
  const ShapeV& s = g.shape();
  if (s == target) return g;
  std::uint32_t mask = 0;
  const int lead = s.rank - target.rank;
  for (int i = 0; i < s.rank; ++i) {
    const int it = i - lead;
    if (it < 0 || (algebra::is_one(target.dims[it]) && !algebra::is_one(s.dims[i])))
      mask |= 1u << i;
  }
  const Ref summed = mask ? sum(g, mask, true) : g;
  return reshape(summed, target);
}

}  // namespace stag

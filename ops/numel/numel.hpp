// numel: the number of elements of x along some axes, as a [] scalar of x's float dtype,
// computed at run time from the bound dims (x's data is not read). It lets graphs divide by
// symbolic sizes: mean's gradient is g / numel(x over the reduced axes).
// Attrs: i[0] = bit mask of counted axes.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::numel> {
  static constexpr OpInfo info{"numel", "#", 1, 0b1};
  static void reference(const KernelArgs&);
};

constexpr Ref numel(Ref x, std::uint32_t mask, DType t = DType::f32) {
  Attrs a;
  a.i[0] = mask;
  return emit(OpId::numel, "numel", {x}, shape_ok(ShapeV{}, t), &a);
}

}  // namespace stag

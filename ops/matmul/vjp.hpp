// Gradient of matmul: two matmuls with transposed operands (no explicit transposes), summed
// over broadcast batch dims. The common `x [B, S, D] @ w [D, N]` case flattens the batch so
// that dW is one [D, B*S] @ [B*S, N] product instead of a [B, D, N] intermediate.
#pragma once

#include <stag/ops/cast/cast.hpp>
#include <stag/ops/matmul/matmul.hpp>
#include <stag/ops/reduce/sum_to.hpp>
#include <stag/ops/reshape/reshape.hpp>

namespace stag {

namespace detail {
// [d0, ..., dk-1, r, c] -> [d0*...*dk-1*r, c] when the leading product is representable.
constexpr bool flatten_rows(const ShapeV& s, ShapeV& out) {
  DimV rows = s.dims[0];
  for (int i = 1; i < s.rank - 1; ++i)
    if (!dim_mul(rows, s.dims[i], rows)) return false;
  out = make_shape({rows, s.dims[s.rank - 1]});
  return true;
}
}  // namespace detail

// bf16 operands (autocast): the incoming gradient is rounded to bf16 (the products read bf16),
// the products accumulate in f32 and the operands' gradients stay f32: the gradient of a bf16
// value is f32, which the cast's VJP passes on unchanged (no rounding to bf16 and back, which
// torch.autocast does, and one pass over each gradient less).
constexpr void OpDef<OpId::matmul>::vjp(VjpCtx& c) {
  const bool ta = c.attr().i[0] != 0, tb = c.attr().i[1] != 0;
  const Ref a = c.x(0), b = c.x(1), g = cast(c.g(), c.x(0).dtype());
  const std::optional<DType> wide =
      a.dtype() == DType::bf16 ? std::optional<DType>(DType::f32) : std::nullopt;
  ShapeV a2, g2;
  if (!ta && b.rank() == 2 && a.rank() > 2 && detail::flatten_rows(a.shape(), a2) &&
      detail::flatten_rows(g.shape(), g2)) {
    // Linear layer: x [..., K] @ w [K, N] (or w^T).
    c.grads[0] = matmul(g, b, false, !tb, wide);
    const Ref af = reshape(a, a2), gf = reshape(g, g2);
    c.grads[1] = tb ? matmul(gf, af, true, false, wide) : matmul(af, gf, true, false, wide);
    return;
  }
  Ref da, db;
  if (!ta && !tb) {
    da = matmul(g, b, false, true, wide);
    db = matmul(a, g, true, false, wide);
  } else if (!ta && tb) {
    da = matmul(g, b, false, false, wide);
    db = matmul(g, a, true, false, wide);
  } else if (ta && !tb) {
    da = matmul(b, g, false, true, wide);
    db = matmul(a, g, false, false, wide);
  } else {
    da = matmul(b, g, true, true, wide);
    db = matmul(g, a, true, true, wide);
  }
  c.grads[0] = sum_to(da, a.shape());
  c.grads[1] = sum_to(db, b.shape());
}

}  // namespace stag

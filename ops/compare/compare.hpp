// Comparisons with numpy broadcasting, producing bool: lt (<), le (<=), eq (==).
//   lt(lengths_row [B, 1], positions [S]) -> [B, S] bool
// Operands must have the same dtype. No gradient flows through a comparison.
// PyTorch: torch.lt / torch.le / torch.eq.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

#define STAG_COMPARE_OPDEF(id, label)                  \
  template <>                                          \
  struct OpDef<OpId::id> {                             \
    static constexpr OpInfo info{#id, label, 2, 0b11}; \
    static void reference(const KernelArgs&);          \
  };
STAG_COMPARE_OPDEF(lt, "<")
STAG_COMPARE_OPDEF(le, "≤")
STAG_COMPARE_OPDEF(eq, "=")
#undef STAG_COMPARE_OPDEF

namespace rules {
constexpr ShapeResult compare(const ShapeV& a, DType ta, const ShapeV& b, DType tb) {
  if (ta != tb || ta == DType::bf16) return shape_fail(ShapeErr::dtype);
  return algebra::broadcast(a, b, DType::boolean);
}
}  // namespace rules

#define STAG_COMPARE_FN(fn)                                                                        \
  constexpr Ref fn(Ref a, Ref b) {                                                                 \
    return emit(OpId::fn, #fn, {a, b},                                                             \
                rules::compare(a.shape(), a.dtype(), b.shape(), b.dtype()));                       \
  }                                                                                                \
  template <class SA, DType TA, class SB, DType TB>                                                \
  constexpr auto fn(Tensor<SA, TA> a, Tensor<SB, TB> b) {                                          \
    constexpr ShapeResult r = rules::compare(SA::value, TA, SB::value, TB);                        \
    STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::" #fn ": operands must have the same dtype", \
                     SA, SB);                                                                      \
    STAG_SHAPE_CHECK(r.err != ShapeErr::broadcast,                                                 \
                     "stag::" #fn                                                                  \
                     ": shapes are not broadcastable (numpy rules; symbols match by name)",        \
                     SA, SB);                                                                      \
    if constexpr (r.ok())                                                                          \
      return typed<r.shape, DType::boolean, SA, SB>(fn(a.ref(), b.ref()));                         \
    else                                                                                           \
      return Tensor<SA, DType::boolean>{a.b, a.id};                                                \
  }
STAG_COMPARE_FN(lt)
STAG_COMPARE_FN(le)
STAG_COMPARE_FN(eq)
#undef STAG_COMPARE_FN

}  // namespace stag

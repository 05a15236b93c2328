// Reductions over axes: sum, mean, max (and sum_to, which VJPs use to undo broadcasting).
//   sum<-1>(x [B, S, D]) -> [B, S];  mean<1>(x, keepdim) -> [B, 1, D];  max<0, 1>(x) -> [D]
// Axes may be negative; keepdim keeps reduced axes as 1. PyTorch: x.sum(dim, keepdim) etc.
// Attrs: i[0] = bit mask of reduced axes, i[1] = keepdim.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

struct KeepDim {};
inline constexpr KeepDim keepdim{};

namespace rules {
constexpr ShapeResult reduce(const ShapeV& x, DType t, std::uint32_t mask, bool keep) {
  if (mask == ~0u) return shape_fail(ShapeErr::axis);
  if (t == DType::boolean || t == DType::bf16) return shape_fail(ShapeErr::dtype);
  return algebra::reduce(x, mask, keep, t);
}
}  // namespace rules

#define STAG_REDUCE_OPDEF(id, label)             \
  template <>                                    \
  struct OpDef<OpId::id> {                       \
    static constexpr OpInfo info{#id, label, 1}; \
    static constexpr void vjp(VjpCtx&);          \
    static void reference(const KernelArgs&);    \
    static std::unique_ptr<CpuKernel> cpu(const CpuNode&); \
  };
STAG_REDUCE_OPDEF(sum, "Σ")
STAG_REDUCE_OPDEF(mean, "mean")
STAG_REDUCE_OPDEF(max, "max")
#undef STAG_REDUCE_OPDEF

namespace detail {
constexpr Attrs reduce_attrs(std::uint32_t mask, bool keep) {
  Attrs a;
  a.i[0] = mask;
  a.i[1] = keep ? 1 : 0;
  return a;
}
}  // namespace detail

// Typed form: fn<axes...>(x) or fn<axes...>(x, keepdim).
#define STAG_REDUCE_FN(fn)                                                                        \
  constexpr Ref fn(Ref x, std::uint32_t mask, bool keep) {                                        \
    const Attrs a = detail::reduce_attrs(mask, keep);                                             \
    return emit(OpId::fn, #fn, {x}, rules::reduce(x.shape(), x.dtype(), mask, keep), &a);         \
  }                                                                                               \
  template <int... Axes, class S, DType T, class... K>                                            \
  constexpr auto fn(Tensor<S, T> x, K...) {                                                       \
    static_assert(sizeof...(Axes) > 0, "stag::" #fn ": name the axes to reduce, e.g. " #fn "<-1>(x)"); \
    static_assert((std::is_same_v<K, KeepDim> && ...), "stag::" #fn ": the only option is stag::keepdim"); \
    constexpr bool keep = sizeof...(K) > 0;                                                       \
    constexpr int axes[sizeof...(Axes) + 1] = {Axes..., 0};                                       \
    constexpr std::uint32_t mask = algebra::axis_mask(axes, sizeof...(Axes), S::rank);           \
    constexpr ShapeResult r = rules::reduce(S::value, T, mask, keep);                             \
    static_assert(r.err != ShapeErr::axis, "stag::" #fn ": reduction axis out of range for the input's rank"); \
    static_assert(r.err != ShapeErr::dtype, "stag::" #fn ": input must be numeric (not bool or bf16)"); \
    if constexpr (r.ok()) return typed<r.shape, T, S>(fn(x.ref(), mask, keep));                   \
    else return x;                                                                                \
  }
STAG_REDUCE_FN(sum)
STAG_REDUCE_FN(mean)
STAG_REDUCE_FN(max)
#undef STAG_REDUCE_FN

}  // namespace stag

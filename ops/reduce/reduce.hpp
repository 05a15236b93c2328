// Reductions over axes: sum, mean, max (and sum_to, which VJPs use to undo broadcasting).
//   sum<-1>(x [B, S, D]) -> [B, S];  mean<1>(x, keepdim) -> [B, 1, D];  max<0, 1>(x) -> [D]
// Axes may be negative; keepdim keeps reduced axes as 1. PyTorch: x.sum(dim, keepdim) etc.
// Naming one axis twice (1 and -2 of a rank-3 tensor) is an error, as in PyTorch. sum and max
// take f32, f64, i32, i64 (integer sums wrap like repeated +); mean takes floats only (an
// integer mean would truncate; PyTorch refuses it too).
// Attrs: i[0] = bit mask of reduced axes, i[1] = keepdim.
#pragma once

#include <bit>

#include <stag/ops/op.hpp>

namespace stag {

struct KeepDim {};
inline constexpr KeepDim keepdim{};

namespace rules {
constexpr ShapeResult reduce(const ShapeV& x, DType t, std::uint32_t mask, bool keep,
                             bool float_only = false) {
  if (mask == ~0u) return shape_fail(ShapeErr::axis);
  if (t == DType::boolean || t == DType::bf16 || (float_only && !is_float(t)))
    return shape_fail(ShapeErr::dtype);
  return algebra::reduce(x, mask, keep, t);
}
}  // namespace rules

#define STAG_REDUCE_OPDEF(id, label)                       \
  template <>                                              \
  struct OpDef<OpId::id> {                                 \
    static constexpr OpInfo info{#id, label, 1};           \
    static constexpr void vjp(VjpCtx&);                    \
    static void reference(const KernelArgs&);              \
    static std::unique_ptr<Kernel> cpu(const KernelNode&); \
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
#define STAG_REDUCE_FN(fn, float_only, dtype_message)                                              \
  constexpr Ref fn(Ref x, std::uint32_t mask, bool keep) {                                         \
    const Attrs a = detail::reduce_attrs(mask, keep);                                              \
    return emit(OpId::fn, #fn, {x}, rules::reduce(x.shape(), x.dtype(), mask, keep, float_only),   \
                &a);                                                                               \
  }                                                                                                \
  template <int... Axes, class S, DType T, class... K>                                             \
  constexpr auto fn(Tensor<S, T> x, K...) {                                                        \
    static_assert(sizeof...(Axes) > 0,                                                             \
                  "stag::" #fn ": name the axes to reduce, e.g. " #fn "<-1>(x)");                  \
    static_assert((std::is_same_v<K, KeepDim> && ...),                                             \
                  "stag::" #fn ": the only option is stag::keepdim");                              \
    constexpr bool keep = sizeof...(K) > 0;                                                        \
    constexpr int axes[sizeof...(Axes) + 1] = {Axes..., 0};                                        \
    constexpr std::uint32_t mask = algebra::axis_mask(axes, sizeof...(Axes), S::rank);             \
    constexpr ShapeResult r = rules::reduce(S::value, T, mask, keep, float_only);                  \
    constexpr bool distinct = mask == ~0u || std::popcount(mask) == int{sizeof...(Axes)};          \
    STAG_SHAPE_CHECK(r.err != ShapeErr::axis,                                                      \
                     "stag::" #fn                                                                  \
                     ": reduction axis out of range for the input's rank (valid: -rank .. "        \
                     "rank-1)",                                                                    \
                     S, void);                                                                     \
    STAG_SHAPE_CHECK(distinct,                                                                     \
                     "stag::" #fn ": an axis is named twice (e.g. 1 and -2 of a rank-3 input)", S, \
                     void);                                                                        \
    STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::" #fn ": " dtype_message, with_dtype<S, T>,  \
                     void);                                                                        \
    if constexpr (r.ok() && distinct)                                                              \
      return typed<r.shape, T, S>(fn(x.ref(), mask, keep));                                        \
    else                                                                                           \
      return x;                                                                                    \
  }
STAG_REDUCE_FN(sum, false,
               "input must be f32, f64, i32 or i64; count a bool mask as sum<...>(cast<f32>(mask))")
STAG_REDUCE_FN(mean, true,
               "input must be f32 or f64 (an integer mean would truncate); cast<f32>(x) first")
STAG_REDUCE_FN(max, false, "input must be f32, f64, i32 or i64 (not bool or bf16)")
#undef STAG_REDUCE_FN

}  // namespace stag

// cache_write: writes new rows into a persistent cache tensor in place, at positions read at
// run time (the key/value cache of autoregressive decoding), and returns the updated cache.
//   cache_write(k_cache [B, H, L, Dh], k_new [B, H, T, Dh], pos [1] | [] | [B] i32) -> [B, H, L,
//   Dh]
// Rows pos .. pos+T-1 of the cache's second-to-last dim become the T rows of `rows`; every
// other row keeps its value. With pos [B] (per row: ragged batches), row b of the cache gets
// row b of `rows` at pos[b], and pos[b] = -1 leaves row b alone (a finished or padding row).
// The cache is a state tensor (kFlagState, held in the session's parameter store), the rows
// have the cache's rank, dtype and dims except that one, and pos is i32 or i64. 0 <= pos and
// pos + T <= L are checked when the step runs; a write that does not fit is a stag::Error
// naming the node, pos, T and L, and changes nothing.
// Ordering: the result is the cache itself after the write (no copy: the planner gives the
// node the cache's bytes, `result_is`), so whatever reads the result reads this step's rows
// too (sdpa over the cache). Whatever reads the cache tensor itself runs before the write
// (the planner runs a writer after every other reader of what it writes, `writes`). A
// writer nobody reads is still executed.
// PyTorch: k_cache[..., pos:pos+T, :] = k_new (an in-place slice assignment). No gradient.
// No attrs.
#pragma once

#include <stag/ops/op.hpp>
#include <stag/ops/parameter/parameter.hpp>

namespace stag {

// A persistent state tensor named by its scope, zero-initialised and held in the session's
// parameter store like optimizer moments (kFlagState): it keeps its value from one run to the
// next, is never trained, and is what cache_write writes into.
//   auto k_cache = stag::state<Shape<batch, 2, max_len, 32>>(g / "layers" / 0, "k_cache");
template <class S, DType T = DType::f32>
constexpr auto state(Scope s, std::string_view leaf) {
  static_assert(ShapeType<S>, "stag::state: the template argument must be a stag::Shape<...>");
  using C = canonical_t<S>;
  Builder& g = *s.b;
  register_syms<C>(g);
  const Attrs a = param_attrs(kZeros);
  const int id = g.add(code(OpId::parameter), {}, C::value, T, &a, leaf, kFlagState);
  g.nodes[static_cast<std::size_t>(id)].scope = s.id;
  return Tensor<C, T>{&g, id};
}

template <>
struct OpDef<OpId::cache_write> {
  static constexpr OpInfo info{"cache_write", "cache←", 3, 0b111};
  static constexpr std::uint8_t writes = 0b001;  // the cache
  static constexpr std::int8_t result_is = 0;    // the result is the written cache
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

namespace rules {
constexpr ShapeResult cache_write(const ShapeV& cache, DType tc, const ShapeV& rows, DType tr,
                                  const ShapeV& pos, DType tp) {
  if (tc != tr) return shape_fail(ShapeErr::dtype);
  if (!is_integer(tp)) return shape_fail(ShapeErr::index_dtype);
  if (cache.rank < 2 || rows.rank != cache.rank) return shape_fail(ShapeErr::rank);
  for (int i = 0; i < cache.rank; ++i)
    if (i != cache.rank - 2 && !(cache.dims[i] == rows.dims[i]))
      return shape_fail(ShapeErr::shape_mismatch);
  const bool one = pos.rank == 0 || (pos.rank == 1 && pos.dims[0] == static_dim(1));
  const bool per_row = pos.rank == 1 && pos.dims[0] == cache.dims[0];
  if (!one && !per_row) return shape_fail(ShapeErr::not_one);
  return shape_ok(cache, tc);
}
}  // namespace rules

constexpr Ref cache_write(Ref cache, Ref rows, Ref pos) {
  return emit(OpId::cache_write, "cache_write", {cache, rows, pos},
              rules::cache_write(cache.shape(), cache.dtype(), rows.shape(), rows.dtype(),
                                 pos.shape(), pos.dtype()));
}

template <class SC, DType TC, class SR, DType TR, class SP, DType TP>
constexpr auto cache_write(Tensor<SC, TC> cache, Tensor<SR, TR> rows, Tensor<SP, TP> pos) {
  constexpr ShapeResult r = rules::cache_write(SC::value, TC, SR::value, TR, SP::value, TP);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype,
                   "stag::cache_write: the rows must have the cache's dtype", SC, SR);
  STAG_SHAPE_CHECK(r.err != ShapeErr::index_dtype, "stag::cache_write: pos must be i32 or i64", SP);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::cache_write: the cache and the rows must have the same rank (at least 2: "
                   "[..., L, D] and [..., T, D])",
                   SC, SR);
  STAG_SHAPE_CHECK(
      r.err != ShapeErr::shape_mismatch,
      "stag::cache_write: the rows must have the cache's dims except the second-to-last "
      "(the positions)",
      SC, SR);
  STAG_SHAPE_CHECK(r.err != ShapeErr::not_one,
                   "stag::cache_write: pos must be [1] or [] (one position for every row) or "
                   "[B] (one per row of the cache's first dim)",
                   SC, SP);
  if constexpr (r.ok())
    return Tensor<SC, TC>{cache.b, cache_write(cache.ref(), rows.ref(), pos.ref()).id};
  else
    return cache;
}

}  // namespace stag

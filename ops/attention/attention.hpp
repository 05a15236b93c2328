// attention: fused scaled dot-product attention, softmax(q k^T * scale, masked) v, as one op
// whose kernels never hold the [Sq, Sk] score matrix (flash-attention-2 on the CPU).
//   sdpa(q [B, H, Sq, Dk], k [B, KVH, Sk, Dk], v [B, KVH, Sk, Dv]) -> [B, H, Sq, Dv]
//   sdpa(q [B, Sq, Dk], k [B, Sk, Dk], v [B, Sk, Dv]) -> [B, Sq, Dv]      (one head)
//   sdpa(q, k, v, keep [B|1, H|1, Sq|1, Sk] bool, {...})                 (a dense keep mask)
// H must be a multiple of KVH (grouped-query attention: query head h reads key/value head
// h / (H / KVH), without repeating k and v). Options: a built-in mask (causal, or a causal
// sliding window of `window` keys; query q sits at key position q + Sk - Sq, as in
// causal_mask<Sq, Sk>), the scale (default 1 / sqrt(Dk)) and dropout on the probabilities
// with the counter-based RNG of the dropout op (element index ((b H + h) Sq + q) Sk + k of
// the [B, H, Sq, Sk] weights, so the masks equal the unfused path's). NOTE: a fully masked
// query row gives zeros, as masked softmax does. f32 or f64.
// PyTorch: F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=p,
// is_causal=True, scale=s, enable_gqa=True).
// Over a key/value cache, with one position per batch row (decoding, ragged batches):
//   sdpa(q [B, H, T, Dk], k [B, KVH, L, Dk], v [B, KVH, L, Dv], cache_positions(pos [B] i32),
//        {.mask = AttnMask::causal | AttnMask::sliding_window})
// pos[b] is the cache position of row b's first query: query i of row b sees key j iff
// j <= pos[b] + i (and, with a window, j > pos[b] + i - window); pos[b] = -1 makes row b
// inactive (zeros out, no work). The kernels skip the key tiles past each query tile's last
// visible key, so a step costs O(T (pos + T)), not O(T L). Positions must be in
// [-1, L - T] (a stag::Error otherwise). Inference only: no dropout, and differentiating it
// is a compile error (stag::grad names this op).
// Attrs: i[0] = mask kind (attn::MaskKind), i[1] = window, i[2] = dropout salt, i[3] = 1 when
// the scale is the default, i[4] = 1 when input 3 is the cache positions, f[0] = scale,
// f[1] = dropout p.
// Gradients: attention_backward (dq) and attention_backward_kv (dk or dv, attr i[5]), which
// recompute the probabilities tile by tile from the forward's saved log-sum-exp.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::attention> {
  // Inputs: q, k, v, and optionally the keep mask (no gradient).
  static constexpr OpInfo info{"attention", "attention", -1, 0b1000};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<CpuKernel> cpu(const CpuNode&);
  static constexpr std::uint8_t cpu_strided = 0b1111;  // q, k, v and the mask may be views
};
// dq. Inputs: q, k, v, o (the forward's output), do, and the keep mask if the forward has one.
template <>
struct OpDef<OpId::attention_backward> {
  static constexpr OpInfo info{"attention_backward", "dattention", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<CpuKernel> cpu(const CpuNode&);
  static constexpr std::uint8_t cpu_strided = 0b111111;
};
// dk (attr i[5] = 0) or dv (1). Inputs: the attention_backward node, then its inputs. The CPU
// kernel takes the values that attention_backward computed along with dq; the reference
// kernel recomputes them.
template <>
struct OpDef<OpId::attention_backward_kv> {
  static constexpr OpInfo info{"attention_backward_kv", "dattention_kv", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<CpuKernel> cpu(const CpuNode&);
};

// The built-in masks; the kernels skip the key tiles they rule out.
enum class AttnMask : std::int8_t { none = 0, causal = 1, sliding_window = 2 };

struct SdpaOptions {
  AttnMask mask = AttnMask::none;
  std::int64_t window = 0;  // sliding_window: each query keeps its `window` latest keys
  double scale = 0.0;       // 0: 1 / sqrt(Dk)
  double dropout = 0.0;     // on the probabilities, in training mode
  // The dropout stream's salt; -1: the builder's node count, as the dropout op takes it. A
  // rewrite of an unfused chain passes its dropout node's salt, so the masks stay the same.
  std::int64_t salt = -1;
};

namespace rules {
constexpr ShapeResult attention(const ShapeV& q, DType tq, const ShapeV& k, DType tk,
                                const ShapeV& v, DType tv) {
  if ((tq != DType::f32 && tq != DType::f64) || tk != tq || tv != tq)
    return shape_fail(ShapeErr::dtype);
  if (q.rank < 3 || q.rank > 4 || k.rank != q.rank || v.rank != q.rank)
    return shape_fail(ShapeErr::rank);
  const int r = q.rank;
  if (!(q.dims[0] == k.dims[0]) || !(k.dims[0] == v.dims[0]))
    return shape_fail(ShapeErr::batch_dims);
  if (r == 4) {
    const DimV hq = q.dims[1], hk = k.dims[1];
    if (!(hk == v.dims[1])) return shape_fail(ShapeErr::batch_dims);
    const bool grouped = hq.is_static() && hk.is_static() && hk.coef > 0 && hq.coef % hk.coef == 0;
    if (!(hq == hk) && !grouped) return shape_fail(ShapeErr::batch_dims);
  }
  if (!(q.dims[r - 1] == k.dims[r - 1])) return shape_fail(ShapeErr::inner_dim);
  if (!(k.dims[r - 2] == v.dims[r - 2])) return shape_fail(ShapeErr::shape_mismatch);
  ShapeV out = q;
  out.dims[r - 1] = v.dims[r - 1];
  return shape_ok(out, tq);
}
// The scores' shape [B, H, Sq, Sk] (or [B, Sq, Sk]), which a keep mask broadcasts to.
constexpr ShapeV attention_scores(const ShapeV& q, const ShapeV& k) {
  ShapeV s = q;
  s.dims[q.rank - 1] = k.dims[k.rank - 2];
  return s;
}
constexpr ShapeResult masked_attention(const ShapeV& q, DType tq, const ShapeV& k, DType tk,
                                       const ShapeV& v, DType tv, const ShapeV& m, DType tm) {
  const ShapeResult r = attention(q, tq, k, tk, v, tv);
  if (!r.ok()) return r;
  if (tm != DType::boolean) return shape_fail(ShapeErr::mask_dtype);
  if (m.rank != q.rank) return shape_fail(ShapeErr::mask_rank);
  if (!algebra::broadcasts_to(m, attention_scores(q, k)))
    return shape_fail(ShapeErr::mask_broadcast);
  return r;
}
}  // namespace rules

// The attention mask of sdpa over a key/value cache: pos [B] i32, the cache position of each
// batch row's first query (see the top of this file). Made by cache_positions(pos).
template <class S, DType T>
struct CachePositions {
  Tensor<S, T> pos;
};
template <class S, DType T>
constexpr CachePositions<S, T> cache_positions(Tensor<S, T> pos) {
  return {pos};
}

namespace rules {
constexpr ShapeResult cached_attention(const ShapeV& q, DType tq, const ShapeV& k, DType tk,
                                       const ShapeV& v, DType tv, const ShapeV& pos, DType tp) {
  const ShapeResult r = attention(q, tq, k, tk, v, tv);
  if (!r.ok()) return r;
  if (tp != DType::i32) return shape_fail(ShapeErr::index_dtype);
  if (pos.rank != 1 || !(pos.dims[0] == q.dims[0])) return shape_fail(ShapeErr::labels);
  return r;
}
}  // namespace rules

namespace detail {
constexpr Attrs sdpa_attrs(const SdpaOptions& o, std::int64_t salt) {
  // NOTE: written as !(p >= 0 && p < 1) so that a NaN p is refused too.
  if (!(o.dropout >= 0.0 && o.dropout < 1.0))
    throw GraphError("stag::sdpa: dropout must be in [0, 1) (the probability of zeroing a weight)");
  if (o.mask == AttnMask::sliding_window && o.window < 1)
    throw GraphError("stag::sdpa: a sliding window needs window >= 1 (keys each query keeps)");
  if (!(o.scale >= 0.0)) throw GraphError("stag::sdpa: scale must be >= 0 (0 means 1 / sqrt(Dk))");
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(o.mask);
  a.i[1] = o.window;
  a.i[2] = salt;
  a.i[3] = o.scale == 0.0 ? 1 : 0;
  a.f[0] = o.scale;
  a.f[1] = o.dropout;
  return a;
}
}  // namespace detail

// Untyped front-end; `keep` may be an invalid Ref (no dense mask).
constexpr Ref sdpa(Ref q, Ref k, Ref v, Ref keep, const SdpaOptions& o = {}) {
  const Attrs a = detail::sdpa_attrs(o, o.salt >= 0 ? o.salt : q.b->size());
  if (!keep.valid())
    return emit(OpId::attention, "attention", {q, k, v},
                rules::attention(q.shape(), q.dtype(), k.shape(), k.dtype(), v.shape(), v.dtype()),
                &a);
  return emit(OpId::attention, "attention", {q, k, v, keep},
              rules::masked_attention(q.shape(), q.dtype(), k.shape(), k.dtype(), v.shape(),
                                      v.dtype(), keep.shape(), keep.dtype()),
              &a);
}

// Untyped front-end of sdpa over a key/value cache; `pos` is [B] i32.
constexpr Ref sdpa_cached(Ref q, Ref k, Ref v, Ref pos, const SdpaOptions& o) {
  if (o.mask != AttnMask::causal && o.mask != AttnMask::sliding_window)
    throw GraphError(
        "stag::sdpa: attention over a cache (cache_positions) is causal: pass .mask = "
        "AttnMask::causal or AttnMask::sliding_window");
  if (o.dropout != 0.0)
    throw GraphError(
        "stag::sdpa: attention over a cache (cache_positions) is for inference: no dropout");
  Attrs a = detail::sdpa_attrs(o, 0);
  a.i[4] = 1;
  return emit(OpId::attention, "attention", {q, k, v, pos},
              rules::cached_attention(q.shape(), q.dtype(), k.shape(), k.dtype(), v.shape(),
                                      v.dtype(), pos.shape(), pos.dtype()),
              &a);
}

constexpr Ref attention_backward(Ref q, Ref k, Ref v, Ref o, Ref g, Ref keep, const Attrs& a) {
  const ShapeResult r = shape_ok(q.shape(), q.dtype());
  return keep.valid()
             ? emit(OpId::attention_backward, "attention_backward", {q, k, v, o, g, keep}, r, &a)
             : emit(OpId::attention_backward, "attention_backward", {q, k, v, o, g}, r, &a);
}
// which = 0: dk, 1: dv.
constexpr Ref attention_backward_kv(Ref dq, Ref q, Ref k, Ref v, Ref o, Ref g, Ref keep, Attrs a,
                                    int which) {
  a.i[5] = which;
  const ShapeResult r = shape_ok(which == 0 ? k.shape() : v.shape(), q.dtype());
  return keep.valid() ? emit(OpId::attention_backward_kv, "attention_backward_kv",
                             {dq, q, k, v, o, g, keep}, r, &a)
                      : emit(OpId::attention_backward_kv, "attention_backward_kv",
                             {dq, q, k, v, o, g}, r, &a);
}

namespace detail {
template <ShapeResult R>
constexpr void sdpa_checks() {
  static_assert(R.err != ShapeErr::dtype, "stag::sdpa: q, k and v must all be f32 or all be f64");
  static_assert(R.err != ShapeErr::rank,
                "stag::sdpa: q, k and v must all be [batch, heads, seq, head_dim] or all "
                "[batch, seq, head_dim]");
  static_assert(R.err != ShapeErr::batch_dims,
                "stag::sdpa: the batch dims of q, k and v differ, or q's heads are not a "
                "multiple of k's and v's heads (grouped-query attention)");
  static_assert(R.err != ShapeErr::inner_dim,
                "stag::sdpa: q and k need the same head dim (the last dim)");
  static_assert(R.err != ShapeErr::shape_mismatch,
                "stag::sdpa: k and v need the same sequence length (dim -2)");
  static_assert(R.err != ShapeErr::mask_dtype, "stag::sdpa: the keep mask must be bool");
  static_assert(R.err != ShapeErr::mask_rank,
                "stag::sdpa: the keep mask needs the scores' rank ([B, H, Sq, Sk] for 4-d q); "
                "unsqueeze it explicitly");
  static_assert(R.err != ShapeErr::mask_broadcast,
                "stag::sdpa: the keep mask does not broadcast to the scores [B, H, Sq, Sk]");
}
}  // namespace detail

template <class SQ, class SK, class SV, DType T>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, const SdpaOptions& o = {}) {
  constexpr ShapeResult r = rules::attention(SQ::value, T, SK::value, T, SV::value, T);
  detail::sdpa_checks<r>();
  if constexpr (r.ok())
    return typed<r.shape, T, SQ, SK, SV>(sdpa(q.ref(), k.ref(), v.ref(), Ref{}, o));
  else
    return q;
}
// sdpa over a key/value cache: k and v are the cache [B, KVH, L, D] (usually cache_write's
// result, so that they hold this step's keys and values), pos [B] i32 each row's position.
template <class SQ, class SK, class SV, DType T, class SP, DType TP>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, CachePositions<SP, TP> at,
                    const SdpaOptions& o = {.mask = AttnMask::causal}) {
  constexpr ShapeResult r =
      rules::cached_attention(SQ::value, T, SK::value, T, SV::value, T, SP::value, TP);
  detail::sdpa_checks<r>();
  static_assert(r.err != ShapeErr::index_dtype,
                "stag::sdpa: the cache positions must be i32 (cache_positions(pos), pos [B])");
  static_assert(r.err != ShapeErr::labels,
                "stag::sdpa: the cache positions must be [B], one per row of q's batch dim "
                "(cache_positions(pos))");
  if constexpr (r.ok())
    return typed<r.shape, T, SQ, SK, SV>(sdpa_cached(q.ref(), k.ref(), v.ref(), at.pos.ref(), o));
  else
    return q;
}

template <class SQ, class SK, class SV, DType T, class SM, DType TM>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, Tensor<SM, TM> keep,
                    const SdpaOptions& o = {}) {
  constexpr ShapeResult r =
      rules::masked_attention(SQ::value, T, SK::value, T, SV::value, T, SM::value, TM);
  detail::sdpa_checks<r>();
  if constexpr (r.ok())
    return typed<r.shape, T, SQ, SK, SV>(sdpa(q.ref(), k.ref(), v.ref(), keep.ref(), o));
  else
    return q;
}

}  // namespace stag

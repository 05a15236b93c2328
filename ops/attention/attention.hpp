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
// the scale is the default, i[4] = 1 when input 3 is the cache positions (2: inputs from 3 on
// are score_mod / mask_mod captures), i[6] = the built-in score (AttnScore), i[7] = the
// captures' counts, f[0] = scale, f[1] = dropout p, f[2] = soft-cap, ext = the mods.
// Gradients: attention_backward (dq) and attention_backward_kv (dk or dv, attr i[5]), which
// recompute the probabilities tile by tile from the forward's saved log-sum-exp.
#pragma once

#include <tuple>

#include <stag/ops/attention/mods.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::attention> {
  // Inputs: q, k, v, and optionally the keep mask (no gradient).
  // NOTE: no no_grad bits: input 3 is a bool keep mask or i32 positions (which never carry
  // gradient) or, with score_mod, a float tensor that does.
  static constexpr OpInfo info{"attention", "attention", -1, 0};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
  static constexpr std::uint8_t cpu_strided = 0b1111;  // q, k, v and the mask may be views
};
// dq. Inputs: q, k, v, o (the forward's output), do, and the forward's further inputs (keep
// mask or captured tensors).
template <>
struct OpDef<OpId::attention_backward> {
  static constexpr OpInfo info{"attention_backward", "dattention", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
  static constexpr std::uint8_t cpu_strided = 0b111111;
};
// dk (attr i[5] = 0), dv (1) or the gradient of score_mod's captured tensor j (2 + j). Inputs: the
// attention_backward node, then its inputs. The CPU kernel takes the values that attention_backward
// computed along with dq; the reference kernel recomputes them.
template <>
struct OpDef<OpId::attention_backward_kv> {
  static constexpr OpInfo info{"attention_backward_kv", "dattention_kv", -1};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
  // q, k and v may be views: the CPU kernel does not read them (and the reference kernel reads a
  // dense copy). Without this, the head-split transposes of q, k and v were copies because
  // this node reads them too.
  static constexpr std::uint8_t cpu_strided = 0b1110;
};

// The built-in masks; the kernels skip the key tiles they rule out.
enum class AttnMask : std::int8_t { none = 0, causal = 1, sliding_window = 2 };

// The built-in score modifications, vectorised in the kernel (a score_mod can express both):
// ALiBi adds -m_h (q' - k) with m_h = 2^(-8 (h + 1) / H) and q' the query's key position;
// soft-capping replaces the scaled score s by c tanh(s / c) (Gemma 2), c = SdpaOptions::softcap.
enum class AttnScore : std::int8_t { none = 0, alibi = 1, softcap = 2 };

struct SdpaOptions {
  AttnMask mask = AttnMask::none;
  std::int64_t window = 0;  // sliding_window: each query keeps its `window` latest keys
  double scale = 0.0;       // 0: 1 / sqrt(Dk)
  double dropout = 0.0;     // on the probabilities, in training mode
  // The dropout stream's salt; -1: the builder's node count, as the dropout op takes it. A
  // rewrite of an unfused chain passes its dropout node's salt, so the masks stay the same.
  std::int64_t salt = -1;
  AttnScore score = AttnScore::none;
  double softcap = 0.0;  // AttnScore::softcap: the cap c > 0
};

// bf16 q, k and v (stag::autocast) give an f32 output, and f32 gradients: the scores, the
// softmax and the products accumulate in f32, as under torch.autocast.
constexpr DType attention_out_dtype(DType t) {
  return t == DType::bf16 ? DType::f32 : t;
}

namespace rules {
constexpr ShapeResult attention(const ShapeV& q, DType tq, const ShapeV& k, DType tk,
                                const ShapeV& v, DType tv) {
  if ((tq != DType::f32 && tq != DType::f64 && tq != DType::bf16) || tk != tq || tv != tq)
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
  return shape_ok(out, attention_out_dtype(tq));
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
  if (o.score == AttnScore::softcap && !(o.softcap > 0.0))
    throw GraphError("stag::sdpa: soft-capping needs softcap > 0 (scores become c tanh(s / c))");
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(o.mask);
  a.i[1] = o.window;
  a.i[2] = salt;
  a.i[3] = o.scale == 0.0 ? 1 : 0;
  a.f[0] = o.scale;
  a.f[1] = o.dropout;
  a.i[6] = static_cast<std::int64_t>(o.score);
  a.f[2] = o.softcap;
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

// The forward node's inputs from 3 on (keep mask or captured tensors) follow q, k, v, o, do.
constexpr Ref attention_backward(Ref q, Ref k, Ref v, Ref o, Ref g, const Ref* extra, int n_extra,
                                 const Attrs& a) {
  const Ref in[kMaxInputs] = {q,
                              k,
                              v,
                              o,
                              g,
                              n_extra > 0 ? extra[0] : Ref{},
                              n_extra > 1 ? extra[1] : Ref{},
                              n_extra > 2 ? extra[2] : Ref{}};
  return emit_list(OpId::attention_backward, "attention_backward", in, 5 + n_extra,
                   shape_ok(q.shape(), attention_out_dtype(q.dtype())), &a);
}
// which = 0: dk, 1: dv, 2 + j: score_mod's captured tensor j.
constexpr Ref attention_backward_kv(Ref dq, Ref q, Ref k, Ref v, Ref o, Ref g, const Ref* extra,
                                    int n_extra, Attrs a, int which) {
  a.i[5] = which;
  const ShapeResult r =
      shape_ok(which == 0 ? k.shape() : (which == 1 ? v.shape() : extra[which - 2].shape()),
               attention_out_dtype(q.dtype()));
  const Ref in[kMaxInputs] = {
      dq, q, k, v, o, g, n_extra > 0 ? extra[0] : Ref{}, n_extra > 1 ? extra[1] : Ref{}};
  return emit_list(OpId::attention_backward_kv, "attention_backward_kv", in, 6 + n_extra, r, &a);
}

namespace detail {
// The scores' shape [..., Sq, Sk] as a type, for the mask errors.
template <class SQ, class SK>
constexpr ShapeV scores_value() {
  ShapeV sc = SQ::value;
  sc.dims[sc.rank - 1] = SK::value.dims[SK::value.rank - 2];
  return sc;
}
template <class SQ, class SK, class SM>
struct mask_shown {
  static constexpr ShapeV scores_v = scores_value<SQ, SK>();
  using scores = shape_t<scores_v, syms_of_t<SQ, SK>>;
  using mask = SM;
};
template <class SQ, class SK>
struct mask_shown<SQ, SK, void> {
  using scores = void;
  using mask = void;
};

// The first line of each error shows the two shapes that disagree: q and k, or k and v, or the
// scores and the keep mask.
template <ShapeResult R, class SQ, class SK, class SV, class SM = void>
constexpr void sdpa_checks() {
  constexpr bool qk_fine =
      SQ::rank == SK::rank &&
      rules::attention(SQ::value, DType::f32, SK::value, DType::f32, SK::value, DType::f32).ok();
  using A = std::conditional_t<qk_fine, SK, SQ>;
  using B = std::conditional_t<qk_fine, SV, SK>;
  STAG_SHAPE_CHECK(R.err != ShapeErr::dtype,
                   "stag::sdpa: q, k and v must all be f32, all bf16 or all f64", SQ);
  STAG_SHAPE_CHECK(R.err != ShapeErr::rank,
                   "stag::sdpa: q, k and v must all be [batch, heads, seq, head_dim] or all "
                   "[batch, seq, head_dim]",
                   A, B);
  STAG_SHAPE_CHECK(R.err != ShapeErr::batch_dims,
                   "stag::sdpa: the batch dims of q, k and v differ, or q's heads are not a "
                   "multiple of k's and v's heads (grouped-query attention)",
                   A, B);
  STAG_SHAPE_CHECK(R.err != ShapeErr::inner_dim,
                   "stag::sdpa: q and k need the same head dim (the last dim) (q, k)", SQ, SK);
  STAG_SHAPE_CHECK(R.err != ShapeErr::shape_mismatch,
                   "stag::sdpa: k and v need the same sequence length (dim -2) (k, v)", SK, SV);
  constexpr bool mask_err = R.err == ShapeErr::mask_dtype || R.err == ShapeErr::mask_rank ||
                            R.err == ShapeErr::mask_broadcast;
  using Shown = mask_shown<SQ, SK, std::conditional_t<mask_err, SM, void>>;
  STAG_SHAPE_CHECK(R.err != ShapeErr::mask_dtype,
                   "stag::sdpa: the keep mask must be bool (scores, mask)", typename Shown::scores,
                   typename Shown::mask);
  STAG_SHAPE_CHECK(R.err != ShapeErr::mask_rank,
                   "stag::sdpa: the keep mask needs the scores' rank ([B, H, Sq, Sk] for 4-d q); "
                   "unsqueeze it explicitly (scores, mask)",
                   typename Shown::scores, typename Shown::mask);
  STAG_SHAPE_CHECK(R.err != ShapeErr::mask_broadcast,
                   "stag::sdpa: the keep mask does not broadcast to the scores [B, H, Sq, Sk] "
                   "(scores, mask)",
                   typename Shown::scores, typename Shown::mask);
}
}  // namespace detail

template <class SQ, class SK, class SV, DType T>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, const SdpaOptions& o = {}) {
  constexpr ShapeResult r = rules::attention(SQ::value, T, SK::value, T, SV::value, T);
  detail::sdpa_checks<r, SQ, SK, SV>();
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
  detail::sdpa_checks<r, SQ, SK, SV>();
  STAG_SHAPE_CHECK(r.err != ShapeErr::index_dtype,
                   "stag::sdpa: the cache positions must be i32 (cache_positions(pos), pos [B])",
                   SQ, SP);
  STAG_SHAPE_CHECK(r.err != ShapeErr::labels,
                   "stag::sdpa: the cache positions must be [B], one per row of q's batch dim "
                   "(cache_positions(pos)) (q, positions)",
                   SQ, SP);
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
  detail::sdpa_checks<r, SQ, SK, SV, SM>();
  if constexpr (r.ok())
    return typed<r.shape, T, SQ, SK, SV>(sdpa(q.ref(), k.ref(), v.ref(), keep.ref(), o));
  else
    return q;
}

// ---- score_mod and mask_mod (ops/attention/mods.hpp) -----------------------------------------
//   sdpa(q, k, v, score_mod(f, t...), {...})               score_mod(score, b, h, q_idx, kv_idx,
//   t...) sdpa(q, k, v, mask_mod(m, t...), {...})                mask_mod(b, h, q_idx, kv_idx,
//   t...) -> bool sdpa(q, k, v, score_mod(f, ...), mask_mod(m, ...), {...})
// f and m are lambdas without captures; the tensors t they read (at most two in all) become
// inputs of the node, and float tensors read by score_mod receive gradients. Indices are raw:
// q_idx in [0, Sq), kv_idx in [0, Sk). The built-in mask of the options still applies (and its
// tiles are skipped analytically); a mask_mod's fully masked tiles are found when the step runs
// (a block mask per step) and skipped too. score_mod<"name">(f, ...) names it in
// describe_kernels() and pictures. Attrs: i[4] = 2, i[7] = score captures + 16 x mask
// captures, ext = the attn::Mods descriptor.
// PyTorch: flex_attention(q, k, v, score_mod=f, block_mask=create_block_mask(m, ...)).
template <fixed_string Name, class F, class... C>
struct ScoreModFn {
  std::tuple<C...> caps;
};
template <fixed_string Name, class F, class... C>
struct MaskModFn {
  std::tuple<C...> caps;
};

template <fixed_string Name = "score_mod", class F, class... S, DType... D>
constexpr ScoreModFn<Name, F, Tensor<S, D>...> score_mod(F, Tensor<S, D>... captured) {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "stag::score_mod: the function must be a lambda without captures; pass the "
                "tensors it reads as further arguments: score_mod(f, t...)");
  return {{captured...}};
}
template <fixed_string Name = "mask_mod", class F, class... S, DType... D>
constexpr MaskModFn<Name, F, Tensor<S, D>...> mask_mod(F, Tensor<S, D>... captured) {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "stag::mask_mod: the function must be a lambda without captures; pass the "
                "tensors it reads as further arguments: mask_mod(f, t...)");
  return {{captured...}};
}

// Untyped front-end: caps holds score_mod's n_score tensors, then mask_mod's.
constexpr Ref sdpa_mods(Ref q, Ref k, Ref v, const Ref* caps, int n_caps, int n_score,
                        const attn::Mods* mods, const SdpaOptions& o) {
  // The message stays on the line of the throw, which the compilers quote.
  // clang-format off
  if (o.score != AttnScore::none) throw GraphError("stag::sdpa: a score_mod and a built-in score (SdpaOptions::score) together; write the built-in one into the score_mod");
  // clang-format on
  Attrs a = detail::sdpa_attrs(o, o.salt >= 0 ? o.salt : q.b->size());
  a.i[4] = 2;
  a.i[7] = n_score + 16 * (n_caps - n_score);
  a.ext = mods;
  const Ref in[kMaxInputs] = {q, k, v, n_caps > 0 ? caps[0] : Ref{}, n_caps > 1 ? caps[1] : Ref{}};
  return emit_list(
      OpId::attention, "attention", in, 3 + n_caps,
      rules::attention(q.shape(), q.dtype(), k.shape(), k.dtype(), v.shape(), v.dtype()), &a);
}

namespace detail {
template <class X>
struct mod_traits;
template <fixed_string N, class F, class... C>
struct mod_traits<ScoreModFn<N, F, C...>> {
  static constexpr fixed_string name = N;
  using fn = F;
  using caps = attn::CapList<attn::CapSpec<C::rank, C::dtype>...>;
  static constexpr int n = sizeof...(C);
  static constexpr bool ranks_ok = ((C::rank <= attn::kMaxCaptureRank) && ... && true);
  template <DType T>
  static constexpr bool dtypes_ok = ((!is_float(C::dtype) || C::dtype == T) && ... && true);
};
template <fixed_string N, class F, class... C>
struct mod_traits<MaskModFn<N, F, C...>> : mod_traits<ScoreModFn<N, F, C...>> {};

template <class F, class T, class L>
struct score_check;
template <class F, class T, class... C>
struct score_check<F, T, attn::CapList<C...>> {
  using R = attn::score_result_t<F, T, C...>;
  static constexpr bool ok = attn::is_dual<R>::value || std::is_arithmetic_v<R>;
};
template <class F, class T, class L>
struct mask_check;
template <class F, class T, class... C>
struct mask_check<F, T, attn::CapList<C...>> {
  static constexpr bool ok = std::is_same_v<attn::mask_result_t<F, T, C...>, bool>;
};

template <class SQ, class SK, class SV, DType T, class SM, class MM>
constexpr auto sdpa_with_mods(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, const SM& sm,
                              const MM& mm, const SdpaOptions& o) {
  constexpr ShapeResult r = rules::attention(SQ::value, T, SK::value, T, SV::value, T);
  sdpa_checks<r, SQ, SK, SV>();
  using TS = mod_traits<SM>;
  using TM = mod_traits<MM>;
  using E = std::conditional_t<T == DType::f64, double, float>;
  constexpr bool has_score = !std::is_same_v<typename TS::fn, attn::NoScore>;
  constexpr bool has_mask = !std::is_same_v<typename TM::fn, attn::NoMask>;
  STAG_SHAPE_CHECK(TS::n + TM::n <= attn::kMaxCaptures,
                   "stag::sdpa: score_mod and mask_mod read at most two tensors together; stack "
                   "or concatenate more into one (q, k)",
                   SQ, SK);
  STAG_SHAPE_CHECK(TS::ranks_ok && TM::ranks_ok,
                   "stag::sdpa: a tensor captured by score_mod / mask_mod has at most 4 dims (q, "
                   "k)",
                   SQ, SK);
  STAG_SHAPE_CHECK(TS::template dtypes_ok<T> && TM::template dtypes_ok<T>,
                   "stag::sdpa: a float tensor captured by score_mod / mask_mod needs the dtype "
                   "of q, k and v (q, k)",
                   with_dtype<SQ, T>, with_dtype<SK, T>);
  if constexpr (has_score)
    static_assert(score_check<typename TS::fn, E, typename TS::caps>::ok,
                  "stag::sdpa: score_mod(score, b, h, q_idx, kv_idx, captured...) must return "
                  "the modified score (an expression of its first argument, or a number)");
  if constexpr (has_mask)
    static_assert(mask_check<typename TM::fn, E, typename TM::caps>::ok,
                  "stag::sdpa: mask_mod(b, h, q_idx, kv_idx, captured...) must return bool "
                  "(true: the query sees the key)");
  if constexpr (r.ok()) {
    Ref caps[attn::kMaxCaptures + 1] = {};
    int n = 0;
    std::apply([&](const auto&... c) { ((caps[n++] = c.ref()), ...); }, sm.caps);
    std::apply([&](const auto&... c) { ((caps[n++] = c.ref()), ...); }, mm.caps);
    const attn::Mods* mods = &attn::kMods<TS::name, typename TS::fn, typename TS::caps, TM::name,
                                          typename TM::fn, typename TM::caps>;
    return typed<r.shape, T, SQ, SK, SV>(
        sdpa_mods(q.ref(), k.ref(), v.ref(), caps, n, TS::n, mods, o));
  } else {
    return q;
  }
}
}  // namespace detail

template <class SQ, class SK, class SV, DType T, fixed_string N, class F, class... C>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v,
                    const ScoreModFn<N, F, C...>& sm, const SdpaOptions& o = {}) {
  return detail::sdpa_with_mods(q, k, v, sm, MaskModFn<"", attn::NoMask>{}, o);
}
template <class SQ, class SK, class SV, DType T, fixed_string N, class F, class... C>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v,
                    const MaskModFn<N, F, C...>& mm, const SdpaOptions& o = {}) {
  return detail::sdpa_with_mods(q, k, v, ScoreModFn<"", attn::NoScore>{}, mm, o);
}
template <class SQ, class SK, class SV, DType T, fixed_string N, class F, class... C,
          fixed_string NM, class FM, class... CM>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v,
                    const ScoreModFn<N, F, C...>& sm, const MaskModFn<NM, FM, CM...>& mm,
                    const SdpaOptions& o = {}) {
  return detail::sdpa_with_mods(q, k, v, sm, mm, o);
}

}  // namespace stag

// Attention as the articles build it: scaled dot-product attention with a boolean keep mask,
// single-head attention with d_k != d_v, multi-head attention (self or cross, query length !=
// key length), and grouped-query attention with rotary positions (minimind). The layers take
// typed masks (models/masks.hpp): padding_keep(keep) for a [B, S] padding mask, causal_keep,
// combined by `&`; each layer checks its dims and its mask before it builds anything.
#pragma once

#include <stag/models/masks.hpp>

namespace stag {

struct NoMask {};
inline constexpr NoMask no_mask{};

template <class Out, class Weights>
struct Attention {
  Out out;          // [..., q_len, d_v]
  Weights weights;  // [..., q_len, k_len], named "weights" for inspection
};

namespace detail {
// A keep mask as the fused op takes it: a causal_mask<Sq, Sk> inside it (through unsqueezes and
// `&`) becomes the op's analytic causal mask, whose masked tiles are skipped; what is left
// stays a dense keep mask (an invalid Ref when nothing is left). `dense` has m's rank.
struct FusedMask {
  bool causal = false;
  Ref dense{};
};
constexpr Ref pad_rank(Ref x, int rank) {
  if (!x.valid() || x.rank() >= rank) return x;
  ShapeV t;
  t.rank = static_cast<std::uint8_t>(rank);
  const ShapeV s = x.shape();
  for (int i = 0; i < rank; ++i)
    t.dims[i] = i < rank - s.rank ? static_dim(1) : s.dims[i - (rank - s.rank)];
  return reshape(x, t);
}
constexpr FusedMask split_causal(Ref m, const DimV& sq, const DimV& sk) {
  const Node nd = m.b->node(m.id);
  const OpId op = op_id(nd.op);
  if (op == OpId::causal_mask) {
    const ShapeV s = m.shape();
    if (s.dims[0] == sq && s.dims[1] == sk) return {true, Ref{}};
  } else if (op == OpId::unsqueeze) {
    const FusedMask r = split_causal(Ref{m.b, nd.in[0]}, sq, sk);
    if (r.causal)
      return {true,
              r.dense.valid() ? unsqueeze(r.dense, static_cast<int>(m.b->attr(m.id).i[0])) : Ref{}};
  } else if (op == OpId::logical_and) {
    const Ref a{m.b, nd.in[0]}, b{m.b, nd.in[1]};
    const FusedMask ra = split_causal(a, sq, sk), rb = split_causal(b, sq, sk);
    if (ra.causal || rb.causal) {
      const Ref da = pad_rank(ra.causal ? ra.dense : a, m.rank());
      const Ref db = pad_rank(rb.causal ? rb.dense : b, m.rank());
      if (!da.valid()) return {true, db};
      if (!db.valid()) return {true, da};
      return {true, logical_and(da, db)};
    }
  }
  return {false, m};
}
}  // namespace detail

// softmax(q k^T / sqrt(d_k), masked) v for q [..., Sq, Dk], k [..., Sk, Dk], v [..., Sk, Dv].
// `keep` has the scores' rank and broadcasts to them; masked keys get weight 0 and a fully
// masked query row gives zeros. PyTorch: F.scaled_dot_product_attention(q, k, v, attn_mask=keep).
// With `fused` (the default) the output is one attention op (ops/attention: no [Sq, Sk] tensor
// is stored, a causal_mask in `keep` skips the masked tiles); `weights` is then the unfused
// softmax chain, computed only when something reads it (a kept node, an output). With
// fused = false the output is that chain followed by dropout and a matmul.
namespace detail {
// The fused op reads q, kf, vf; the unfused chain (and the weights) q, k, v, which differ from
// kf and vf when grouped-query attention repeats its key/value heads for the chain only.
template <class SQ, class SK, class SV, DType T, class KF, class VF, class M>
constexpr auto attention_impl(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, KF kf, VF vf,
                              M keep, double p_drop, bool fused) {
  constexpr auto dk = last_dim<SQ>;
  auto scores = [&] {
    if constexpr (dim_value<dk>().is_static()) {
      return matmul_nt(q, k) * (1.0 / cx::sqrt(static_cast<double>(dim_value<dk>().coef)));
    } else {
      return matmul_nt(q, k) *
             Tensor<Shape<>, T>{q.b, rsqrt(numel(q.ref(), 1u << (SQ::rank - 1), T)).id};
    }
  }();
  auto w = [&] {
    if constexpr (std::is_same_v<M, NoMask>)
      return softmax<-1>(scores);
    else if constexpr (AttentionMaskType<M>)
      return softmax<-1>(scores, keep.values);
    else
      return softmax<-1>(scores, keep);
  }();
  w = w.named("weights");
  using Out = decltype(matmul(w, v));
  if (!fused)  // the chain as written: the fusion pass leaves it alone
    return Attention<Out, decltype(w)>{keep_unfused(matmul(maybe_dropout(w, p_drop), v)), w};
  SdpaOptions o{.dropout = p_drop};
  Ref dense{};
  if constexpr (!std::is_same_v<M, NoMask>) {
    const Ref keep_ref = [&] {
      if constexpr (AttentionMaskType<M>)
        return keep.values.ref();
      else
        return keep.ref();
    }();
    const detail::FusedMask fm =
        detail::split_causal(keep_ref, SQ::value.dims[SQ::rank - 2], SK::value.dims[SK::rank - 2]);
    if (fm.causal) o.mask = AttnMask::causal;
    dense = fm.dense;
  }
  return Attention<Out, decltype(w)>{Out{q.b, sdpa(q.ref(), kf.ref(), vf.ref(), dense, o).id}, w};
}
}  // namespace detail

template <class SQ, class SK, class SV, DType T, class M>
constexpr auto attention(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, M keep,
                         double p_drop = 0.0, bool fused = true) {
  return detail::attention_impl(q, k, v, k, v, keep, p_drop, fused);
}

// [B, S, H*Dh] -> [B, H, S, Dh] and back. The new axes are named: a plain H becomes
// `heads` and the head dim `head_dim`, so shapes read [batch, heads, seq, head_dim].
template <auto H, class S, DType T>
constexpr auto split_heads(Tensor<S, T> x) {
  STAG_SHAPE_CHECK(S::rank == 3, "stag::split_heads: expects [batch, seq, d_model]", S);
  // One declaration each: the dims have different types (Sym<...>, int), and one `auto` with
  // several declarators must deduce one type (g++ 12 accepts it, clang rejects it).
  constexpr auto b = dim_at<S, 0>;
  constexpr auto s = dim_at<S, 1>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto h = named_as<dims::heads, H>;
  STAG_SHAPE_CHECK((dim_divides<d, h>),
                   "stag::split_heads: d_model is not a multiple of the number of heads", S,
                   Shape<H>);
  if constexpr (dim_divides<d, h>) {
    constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, h>>;
    return transpose<1, 2>(view<b, s, h, dh>(x));
  } else {
    return Tensor<Shape<b, h, s, 1>, T>{x.b, full(*x.b, Shape<b, h, s, 1>::value, 0, T).id};
  }
}
template <class S, DType T>
constexpr auto merge_heads(Tensor<S, T> x) {
  STAG_SHAPE_CHECK(S::rank == 4, "stag::merge_heads: expects [batch, heads, seq, head_dim]", S);
  constexpr auto b = dim_at<S, 0>;
  constexpr auto h = dim_at<S, 1>;
  constexpr auto s = dim_at<S, 2>;
  constexpr auto dh = dim_at<S, 3>;
  return view<b, s, prod<h, dh>>(transpose<1, 2>(x));
}

struct AttentionOptions {
  double dropout = 0.0;  // on the attention weights
  bool bias = true;      // biases in the q, k, v, o projections
  // grouped_query_attention only (it has no biases otherwise): biases in the q, k and v
  // projections, none in o (Qwen2).
  bool qkv_bias = false;
  bool rope = false;  // rotary positions on q and k
  double rope_theta = 10000.0;
  bool fused = true;  // one attention op (ops/attention); false: the unfused op chain
};

// The contract of an attention layer's mask, checked before anything is built: a typed keep
// mask [batch|1, q_len|1, k_len] whose last axis covers the keys (or a query mask, by name).
// `layer` is the layer's name as a literal ("stag::encoder_layer"); M is the mask's type, SQ
// and SKV the shapes of the query and key/value inputs. A constant expression: true when the
// mask is fine; otherwise the one error it gives names the layer and shows both shapes.
#define STAG_CHECK_ATTENTION_MASK(layer, M, SQ, SKV)                                               \
  [] {                                                                                             \
    using Mk_ = std::remove_cvref_t<M>;                                                            \
    if constexpr (std::is_same_v<Mk_, ::stag::NoMask>) {                                           \
      return true;                                                                                 \
    } else if constexpr (!::stag::AttentionMaskType<Mk_>) {                                        \
      STAG_SHAPE_CHECK(::stag::AttentionMaskType<Mk_>,                                             \
                       layer                                                                       \
                       ": the mask does not say what true means: pass padding_keep(keep) "         \
                       "(true = attend), from_key_padding_mask(pad) (PyTorch "                     \
                       "key_padding_mask, true = ignore), causal_keep<seq>(g) or their &",         \
                       typename Mk_::shape_type, void);                                            \
      return false;                                                                                \
    } else {                                                                                       \
      using S_ = typename Mk_::shape_type;                                                         \
      using Scores_ =                                                                              \
          ::stag::Shape<::stag::dim_at<SQ, 0>, ::stag::dim_at<SQ, 1>, ::stag::dim_at<SKV, 1>>;     \
      constexpr bool keep_ = Mk_::polarity == ::stag::MaskPolarity::keep;                          \
      constexpr bool rank3_ = S_::rank == 3;                                                       \
      constexpr bool key_ = !rank3_ || Mk_::axis == ::stag::MaskAxis::query ||                     \
                            !::stag::algebra::is_one(S_::value.dims[2]) ||                         \
                            ::stag::algebra::is_one(Scores_::value.dims[2]);                       \
      constexpr bool fits_ = !rank3_ || ::stag::algebra::broadcasts_to(S_::value, Scores_::value); \
      STAG_SHAPE_CHECK(keep_,                                                                      \
                       layer                                                                       \
                       ": this is an ignore mask (true = masked out, as PyTorch "                  \
                       "key_padding_mask); attention in stag takes keep masks (true = "            \
                       "attend): flip it with ~ or make it with from_key_padding_mask(pad)",       \
                       S_, Scores_);                                                               \
      STAG_SHAPE_CHECK(!keep_ || rank3_,                                                           \
                       layer                                                                       \
                       ": the mask must be [batch|1, q_len|1, k_len] (padding_keep turns "         \
                       "a [batch, seq] mask into [batch, 1, seq])",                                \
                       S_, Scores_);                                                               \
      STAG_SHAPE_CHECK(!keep_ || !rank3_ || key_,                                                  \
                       layer                                                                       \
                       ": the last axis of the mask must cover the keys, but it is 1 (a mask "     \
                       "unsqueezed on the query axis); use padding_keep(keep) for keys, "          \
                       "query_keep(keep) if you mean to mask queries",                             \
                       S_, Scores_);                                                               \
      STAG_SHAPE_CHECK(!keep_ || !rank3_ || !key_ || fits_,                                        \
                       layer                                                                       \
                       ": the mask does not broadcast to [batch, q_len, k_len] of the "            \
                       "inputs (each dim equal or 1)",                                             \
                       S_, Scores_);                                                               \
      return keep_ && rank3_ && key_ && fits_;                                                     \
    }                                                                                              \
  }()

namespace detail {
template <class M>
constexpr auto heads_mask(M keep) {
  if constexpr (std::is_same_v<M, NoMask>)
    return keep;
  else
    return unsqueeze<1>(keep.values);  // [B|1, 1, Sq|1, Sk]: the same mask for every head
}

// Rotary positions on q or k [B, H, S, Dh] when o.rope is set. With an odd static Dh the layer
// has recorded its failed check, and x comes back unrotated as the placeholder.
template <class S, DType T>
constexpr Tensor<S, T> maybe_rope(Tensor<S, T> x, const AttentionOptions& o) {
  if (!o.rope) return x;
  constexpr DimV dh = S::value.dims[S::rank - 1];
  if constexpr (dh.is_static() && dh.coef % 2 != 0)
    return x;
  else
    return rope(x, {.theta = o.rope_theta});
}

// A placeholder result of the layer's output shape, returned after a failed check so that the
// user's later lines compile (one mistake, one error).
template <class SQ, DType T>
constexpr auto failed_attention(Tensor<SQ, T> xq) {
  using W = Shape<dim_at<SQ, 0>, 1, dim_at<SQ, 1>, 1>;
  auto w = Tensor<W, T>{xq.b, full(*xq.b, W::value, 0, T).id};
  return Attention<Tensor<SQ, T>, decltype(w)>{xq, w};
}
}  // namespace detail

// Single-head attention with separate d_k and d_v (the articles' first step).
template <auto Dk, auto Dv, class S, DType T, class M>
constexpr auto single_head_attention(Scope s, Tensor<S, T> x, M keep, double p_drop = 0.0) {
  constexpr bool mask_ok = STAG_CHECK_ATTENTION_MASK("stag::single_head_attention", M, S, S);
  if constexpr (!mask_ok) {
    return detail::failed_attention(x);
  } else {
    auto guard = s.enter();
    auto q = linear<Dk>(s / "w_q", x), k = linear<Dk>(s / "w_k", x);
    auto v = linear<Dv>(s / "w_v", x);
    return attention(q, k, v, keep, p_drop);
  }
}

// snippet-begin: docs-attention-1
// Multi-head attention: project, split into H heads, attend, merge, project. Self-attention
// passes the same tensor as xq and xkv; cross-attention passes the decoder state and the
// encoder memory (q_len != k_len). PyTorch: nn.MultiheadAttention(D, H, batch_first=True).
template <auto H, class SQ, class SKV, DType T, class M>
constexpr auto multi_head_attention(Scope s, Tensor<SQ, T> xq, Tensor<SKV, T> xkv, M keep,
                                    AttentionOptions o = {}) {
  constexpr auto d = last_dim<SQ>;
  constexpr auto h = named_as<dims::heads, H>;
  constexpr bool same_d = dim_value<d>() == dim_value<last_dim<SKV>>();
  constexpr bool divides = dim_divides<d, h>;
  STAG_SHAPE_CHECK(SQ::rank == 3 && SKV::rank == 3,
                   "stag::multi_head_attention: the inputs must be [batch, seq, d_model]", SQ, SKV);
  STAG_SHAPE_CHECK(same_d,
                   "stag::multi_head_attention: query and key/value inputs need the same d_model",
                   SQ, SKV);
  STAG_SHAPE_CHECK(!same_d || divides,
                   "stag::multi_head_attention: d_model is not a multiple of the number of heads",
                   SQ, Shape<H>);
  constexpr bool mask_ok = STAG_CHECK_ATTENTION_MASK("stag::multi_head_attention", M, SQ, SKV);
  if constexpr (!(same_d && divides && mask_ok)) {
    return detail::failed_attention(xq);
  } else {
    constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, h>>;
    constexpr DimV dhv = dim_value<dh>();
    if constexpr (dhv.is_static() && dhv.coef % 2 != 0)
      if (o.rope)  // one compile error, from model() (graph/report.hpp, STAG_BUILD_CHECKS)
        s.b->fail(build_failure<BuildCheck::mha_rope_odd_head_dim, SQ, Shape<H>>(
            dim_value<d>().coef, dim_value<H>().coef));
    auto guard = s.enter();
    auto q = split_heads<h>(linear<d>(s / "w_q", xq, o.bias));
    auto k = split_heads<h>(linear<d>(s / "w_k", xkv, o.bias));
    auto v = split_heads<h>(linear<d>(s / "w_v", xkv, o.bias));
    q = detail::maybe_rope(q, o);
    k = detail::maybe_rope(k, o);
    auto a = attention(q, k, v, detail::heads_mask(keep), o.dropout, o.fused);
    auto out = linear<d>(s / "w_o", merge_heads(a.out), o.bias);
    return Attention<decltype(out), decltype(a.weights)>{out, a.weights};
  }
}
// snippet-end: docs-attention-1

// Grouped-query attention (minimind, LLaMA 2): H query heads share KVH key/value heads (H a
// multiple of KVH); rotary positions on q and k; no biases. The query heads are laid out as
// [kv_heads, group] (query head h uses key/value head h / group), so shapes read
// [batch, kv_heads*group, seq, head_dim] for queries and [batch, kv_heads, seq, head_dim] for
// keys and values.
template <auto H, auto KVH, class S, DType T, class M>
constexpr auto grouped_query_attention(Scope s, Tensor<S, T> x, M keep, AttentionOptions o = {}) {
  STAG_SHAPE_CHECK(S::rank == 3,
                   "stag::grouped_query_attention: the input must be [batch, seq, d_model]", S,
                   void);
  constexpr auto kvh = named_as<dims::kv_heads, KVH>;
  constexpr bool groups = dim_divides<H, KVH>;
  STAG_SHAPE_CHECK(groups,
                   "stag::grouped_query_attention: the number of heads is not a multiple of the "
                   "number of key/value heads (heads, kv_heads)",
                   Shape<H>, Shape<KVH>);
  constexpr auto d = dim_at<S, 2>;
  constexpr bool divides = groups && dim_divides<d, H>;
  STAG_SHAPE_CHECK(!groups || divides,
                   "stag::grouped_query_attention: d_model is not a multiple of the number of "
                   "heads",
                   S, Shape<H>);
  constexpr bool mask_ok = STAG_CHECK_ATTENTION_MASK("stag::grouped_query_attention", M, S, S);
  if constexpr (!(groups && divides && mask_ok)) {
    return detail::failed_attention(x);
  } else {
    constexpr auto b = dim_at<S, 0>;
    constexpr auto len = dim_at<S, 1>;
    constexpr auto group = named_as<dims::group, dim_quotient<H, KVH>>;
    constexpr auto qh = prod<kvh, group>;
    constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, H>>;
    constexpr DimV dhv = dim_value<dh>();
    if constexpr (dhv.is_static() && dhv.coef % 2 != 0)
      if (o.rope)  // one compile error, from model() (graph/report.hpp, STAG_BUILD_CHECKS)
        s.b->fail(build_failure<BuildCheck::gqa_rope_odd_head_dim, S, Shape<H>>(
            dim_value<d>().coef, dim_value<H>().coef));
    auto guard = s.enter();
    auto q = split_heads<qh>(linear<d>(s / "q_proj", x, o.qkv_bias));
    auto k = split_heads<kvh>(linear<prod<kvh, dh>>(s / "k_proj", x, o.qkv_bias));
    auto v = split_heads<kvh>(linear<prod<kvh, dh>>(s / "v_proj", x, o.qkv_bias));
    q = detail::maybe_rope(q, o);
    k = detail::maybe_rope(k, o);
    // Repeat each key/value head for its group of query heads: [B, KVH, S, Dh] -> [B, H, S, Dh].
    auto repeat = [&](auto t) {
      return view<b, qh, len, dh>(expand<b, kvh, group, len, dh>(unsqueeze<2>(t)));
    };
    // The fused op reads the KVH heads directly; the unfused chain (and the weights) repeat them.
    auto a = detail::attention_impl(q, repeat(k), repeat(v), k, v, detail::heads_mask(keep),
                                    o.dropout, o.fused);
    auto out = linear<d>(s / "o_proj", merge_heads(a.out), false);
    return Attention<decltype(out), decltype(a.weights)>{out, a.weights};
  }
}

}  // namespace stag

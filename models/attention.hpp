// Attention as the articles build it: scaled dot-product attention with a boolean keep mask,
// single-head attention with d_k != d_v, multi-head attention (self or cross, query length !=
// key length), and grouped-query attention with rotary positions (minimind). Masks are typed:
// multi-head attention takes a [batch|1, q_len|1, k_len] keep mask, so a [B, S] padding mask
// must be unsqueezed (padding_keep) and a causal [S, S] mask combines with it by `&`.
#pragma once

#include <stag/models/layers.hpp>

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
    else
      return softmax<-1>(scores, keep);
  }();
  w = w.named("weights");
  using Out = decltype(matmul(w, v));
  if (!fused) return Attention<Out, decltype(w)>{matmul(maybe_dropout(w, p_drop), v), w};
  SdpaOptions o{.dropout = p_drop};
  Ref dense{};
  if constexpr (!std::is_same_v<M, NoMask>) {
    const detail::FusedMask fm = detail::split_causal(keep.ref(), SQ::value.dims[SQ::rank - 2],
                                                      SK::value.dims[SK::rank - 2]);
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

// [B, S, H*Dh] -> [B, H, S, Dh] and back.
template <auto H, class S, DType T>
constexpr auto split_heads(Tensor<S, T> x) {
  static_assert(S::rank == 3, "stag::split_heads: expects [batch, seq, d_model]");
  // One declaration each: the dims have different types (Sym<...>, int), and one `auto` with
  // several declarators must deduce one type (g++ 12 accepts it, clang rejects it).
  constexpr auto b = dim_at<S, 0>;
  constexpr auto s = dim_at<S, 1>;
  constexpr auto d = dim_at<S, 2>;
  return transpose<1, 2>(view<b, s, H, dim_quotient<d, H>>(x));
}
template <class S, DType T>
constexpr auto merge_heads(Tensor<S, T> x) {
  static_assert(S::rank == 4, "stag::merge_heads: expects [batch, heads, seq, head_dim]");
  constexpr auto b = dim_at<S, 0>;
  constexpr auto h = dim_at<S, 1>;
  constexpr auto s = dim_at<S, 2>;
  constexpr auto dh = dim_at<S, 3>;
  return view<b, s, prod<h, dh>>(transpose<1, 2>(x));
}

// A [B, S] padding keep mask as attention's [B, 1, S]; a causal [S, S] one as [1, S, S].
template <class S>
constexpr auto padding_keep(Tensor<S, DType::boolean> keep) {
  return unsqueeze<1>(keep);
}
template <auto Len>
constexpr auto causal_keep(Builder& g) {
  return unsqueeze<0>(causal_mask<Len>(g));
}

struct AttentionOptions {
  double dropout = 0.0;  // on the attention weights
  bool bias = true;      // biases in the q, k, v, o projections
  bool rope = false;     // rotary positions on q and k
  double rope_theta = 10000.0;
  bool fused = true;  // one attention op (ops/attention); false: the unfused op chain
};

namespace detail {
template <class M>
constexpr auto heads_mask(M keep) {
  if constexpr (std::is_same_v<M, NoMask>) {
    return keep;
  } else {
    static_assert(
        M::rank == 3,
        "stag::multi_head_attention: the keep mask must be [batch|1, q_len|1, k_len]; a [B, S] "
        "padding mask becomes [B, 1, S] with padding_keep(keep) (unsqueeze<1>)");
    static_assert(M::dtype == DType::boolean,
                  "stag::multi_head_attention: the keep mask must be bool");
    return unsqueeze<1>(keep);  // [B|1, 1, Sq|1, Sk]: the same mask for every head
  }
}

// Rotary positions on q or k [B, H, S, Dh] when o.rope is set. rope<> refuses an odd static Dh
// with a static_assert, so it is instantiated only for even head dims: attention without rope
// works with any head dim, and asking for rope with an odd one stops compilation here.
template <class S, DType T>
constexpr Tensor<S, T> maybe_rope(Tensor<S, T> x, const AttentionOptions& o) {
  if (!o.rope) return x;
  constexpr DimV dh = S::value.dims[S::rank - 1];
  if constexpr (dh.is_static() && dh.coef % 2 != 0)
    throw GraphError("stag::multi_head_attention: rope needs an even head dim (d_model / heads)");
  else
    return rope(x, {.theta = o.rope_theta});
}
}  // namespace detail

// Single-head attention with separate d_k and d_v (the articles' first step).
template <auto Dk, auto Dv, class S, DType T, class M>
constexpr auto single_head_attention(Scope s, Tensor<S, T> x, M keep, double p_drop = 0.0) {
  auto guard = s.enter();
  auto q = linear<Dk>(s / "w_q", x), k = linear<Dk>(s / "w_k", x);
  auto v = linear<Dv>(s / "w_v", x);
  return attention(q, k, v, keep, p_drop);
}

// snippet-begin: docs-attention-1
// Multi-head attention: project, split into H heads, attend, merge, project. Self-attention
// passes the same tensor as xq and xkv; cross-attention passes the decoder state and the
// encoder memory (q_len != k_len). PyTorch: nn.MultiheadAttention(D, H, batch_first=True).
template <auto H, class SQ, class SKV, DType T, class M>
constexpr auto multi_head_attention(Scope s, Tensor<SQ, T> xq, Tensor<SKV, T> xkv, M keep,
                                    AttentionOptions o = {}) {
  auto guard = s.enter();
  constexpr auto d = last_dim<SQ>;
  static_assert(dim_value<d>() == dim_value<last_dim<SKV>>(),
                "stag::multi_head_attention: query and key/value inputs need the same d_model");
  auto q = split_heads<H>(linear<d>(s / "w_q", xq, o.bias));
  auto k = split_heads<H>(linear<d>(s / "w_k", xkv, o.bias));
  auto v = split_heads<H>(linear<d>(s / "w_v", xkv, o.bias));
  q = detail::maybe_rope(q, o);
  k = detail::maybe_rope(k, o);
  auto a = attention(q, k, v, detail::heads_mask(keep), o.dropout, o.fused);
  auto out = linear<d>(s / "w_o", merge_heads(a.out), o.bias);
  return Attention<decltype(out), decltype(a.weights)>{out, a.weights};
}
// snippet-end: docs-attention-1

// Grouped-query attention (minimind, LLaMA 2): H query heads share KVH key/value heads (H a
// multiple of KVH); rotary positions on q and k; no biases.
template <auto H, auto KVH, class S, DType T, class M>
constexpr auto grouped_query_attention(Scope s, Tensor<S, T> x, M keep, AttentionOptions o = {}) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto len = dim_at<S, 1>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto dh = dim_quotient<d, H>;
  constexpr auto group = dim_quotient<H, KVH>;
  auto q = split_heads<H>(linear<d>(s / "q_proj", x, false));
  auto k = split_heads<KVH>(linear<prod<KVH, dh>>(s / "k_proj", x, false));
  auto v = split_heads<KVH>(linear<prod<KVH, dh>>(s / "v_proj", x, false));
  q = detail::maybe_rope(q, o);
  k = detail::maybe_rope(k, o);
  // Repeat each key/value head for its group of query heads: [B, KVH, S, Dh] -> [B, H, S, Dh].
  auto repeat = [&](auto t) {
    return view<b, H, len, dh>(expand<b, KVH, group, len, dh>(unsqueeze<2>(t)));
  };
  // The fused op reads the KVH heads directly; the unfused chain (and the weights) repeat them.
  auto a = detail::attention_impl(q, repeat(k), repeat(v), k, v, detail::heads_mask(keep),
                                  o.dropout, o.fused);
  auto out = linear<d>(s / "o_proj", merge_heads(a.out), false);
  return Attention<decltype(out), decltype(a.weights)>{out, a.weights};
}

}  // namespace stag

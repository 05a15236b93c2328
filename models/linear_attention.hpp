// Two attention variants beside softmax attention (models/attention.hpp): linear attention
// (Katharopoulos et al. 2020), whose cost grows linearly with the sequence, in its non-causal and
// causal forms, single- and multi-head; and additive (Bahdanau) attention, the score of the
// RNN-era sequence-to-sequence models. To add a variant: a function over typed tensors that
// checks its shapes first (one error naming it), then builds from the ops; parameters by Scope.
#pragma once

#include <stag/models/attention.hpp>

namespace stag {

// ---- linear attention ---------------------------------------------------------------------

// The feature map of linear attention: phi(x) = elu(x) + 1, positive everywhere.
template <class S, DType T>
constexpr auto linear_attention_features(Tensor<S, T> x) {
  return elu(x) + 1.0;
}

namespace detail {
// The shape contract of the linear attention cores: q [..., Sq, Dk], k [..., Sk, Dk],
// v [..., Sk, Dv] of one rank >= 2; with `causal`, Sq == Sk. True when the shapes are fine.
template <class SQ, class SK, class SV, bool Causal>
constexpr bool linear_attention_shapes_ok() {
  constexpr bool ranks = SQ::rank >= 2 && SQ::rank == SK::rank && SK::rank == SV::rank;
  STAG_SHAPE_CHECK(ranks,
                   "stag::linear_attention: q, k and v need one rank, at least 2 ([..., seq, dim])",
                   SQ, SK);
  if constexpr (!ranks) {
    return false;
  } else {
    constexpr bool dk = dim_value<last_dim<SQ>>() == dim_value<last_dim<SK>>();
    constexpr bool kv = dim_value<dim_at<SK, -2>>() == dim_value<dim_at<SV, -2>>();
    constexpr bool seq = !Causal || dim_value<dim_at<SQ, -2>>() == dim_value<dim_at<SK, -2>>();
    STAG_SHAPE_CHECK(dk, "stag::linear_attention: q and k need the same last dim (d_k)", SQ, SK);
    STAG_SHAPE_CHECK(kv, "stag::linear_attention: k and v need the same length (axis -2)", SK, SV);
    STAG_SHAPE_CHECK(seq,
                     "stag::causal_linear_attention: queries and keys need the same sequence "
                     "(axis -2); the causal form is self-attention",
                     SQ, SK);
    return dk && kv && seq;
  }
}
}  // namespace detail

// Non-causal linear attention for q [..., Sq, Dk], k [..., Sk, Dk], v [..., Sk, Dv]:
//   out_i = phi(q_i) (sum_j phi(k_j)^T v_j) / (phi(q_i) . sum_j phi(k_j) + eps)  -> [..., Sq, Dv]
// computed as phi(Q) (phi(K)^T V) / (phi(Q) sum_k phi(K)): no [Sq, Sk] matrix, cost linear in
// the lengths. Leading dims broadcast as in matmul. No mask (pad keys by zeroing their phi: a
// key with phi(k) = 0 contributes nothing). PyTorch: with phi = F.elu(x) + 1,
//   kv = phi(k).transpose(-2, -1) @ v; z = phi(k).sum(-2, keepdim=True)
//   out = (phi(q) @ kv) / (phi(q) @ z.transpose(-2, -1) + eps)
template <class SQ, class SK, class SV, DType T>
constexpr auto linear_attention(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v,
                                double eps = 1e-6) {
  constexpr bool ok = detail::linear_attention_shapes_ok<SQ, SK, SV, false>();
  if constexpr (!ok) {
    return q;
  } else {
    // One declaration each: q and k may differ in type (clang rejects one `auto` for both).
    auto fq = linear_attention_features(q);
    auto fk = linear_attention_features(k);
    auto kv = matmul_tn(fk, v);         // [..., Dk, Dv]
    auto z = sum<-2>(fk, keepdim);      // [..., 1, Dk]
    auto num = matmul(fq, kv);          // [..., Sq, Dv]
    auto den = matmul_nt(fq, z) + eps;  // [..., Sq, 1]
    return num / den;
  }
}

// snippet-begin: docs-linear-attention
// Causal linear attention (self-attention) for q, k [..., S, Dk], v [..., S, Dv]: query i sees
// keys j <= i only,
//   out_i = phi(q_i) S_i / (phi(q_i) . z_i + eps),  S_i = sum_{j<=i} phi(k_j)^T v_j [Dk, Dv],
//                                                  z_i = sum_{j<=i} phi(k_j) [Dk]
// with S and z as cumsums over the sequence. NOTE: S is stored for every position, a
// [..., S, Dk, Dv] tensor (the paper's recurrent form keeps one); fine for small head dims.
// PyTorch: s = torch.cumsum(phi(k)[..., :, None] * v[..., None, :], dim=-3);
//   z = torch.cumsum(phi(k), dim=-2)
//   out = (phi(q)[..., None, :] @ s).squeeze(-2) / ((phi(q) * z).sum(-1, keepdim=True) + eps)
template <class SQ, class SK, class SV, DType T>
constexpr auto causal_linear_attention(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v,
                                       double eps = 1e-6) {
  constexpr bool ok = detail::linear_attention_shapes_ok<SQ, SK, SV, true>();
  if constexpr (!ok) {
    return q;
  } else {
    auto fq = linear_attention_features(q);
    auto fk = linear_attention_features(k);
    auto s = cumsum<-3>(unsqueeze<-1>(fk) * unsqueeze<-2>(v));  // [..., S, Dk, Dv]
    auto z = cumsum<-2>(fk);                                    // [..., S, Dk]
    auto num = squeeze<-2>(matmul(unsqueeze<-2>(fq), s));       // [..., S, Dv]
    auto den = sum<-1>(fq * z, keepdim) + eps;                  // [..., S, 1]
    return num / den;
  }
}
// snippet-end: docs-linear-attention

enum class LinearAttentionForm : std::uint8_t { full, causal };

struct LinearAttentionOptions {
  bool bias = true;   // biases in the q, k, v, o projections
  double eps = 1e-6;  // added to the normaliser phi(q) . sum phi(k) (positive, never 0)
};

// Multi-head linear attention: project, split into H heads, linear attention per head, merge,
// project; the parameters are named as in multi_head_attention (w_q, w_k, w_v, w_o). The full
// form takes any xkv (cross-attention); the causal form is self-attention (xq and xkv of one
// sequence, usually the same tensor).
//   multi_head_linear_attention<4>(s, x [B, S, D], x) -> [B, S, D]
//   multi_head_linear_attention<4, LinearAttentionForm::causal>(s, x, x) -> [B, S, D]
// PyTorch: the projections of nn.MultiheadAttention(D, H, batch_first=True) around the
// formulas of linear_attention / causal_linear_attention on [B, H, S, D / H].
template <auto H, LinearAttentionForm F = LinearAttentionForm::full, class SQ, class SKV, DType T>
constexpr auto multi_head_linear_attention(Scope s, Tensor<SQ, T> xq, Tensor<SKV, T> xkv,
                                           LinearAttentionOptions o = {}) {
  STAG_SHAPE_CHECK(SQ::rank == 3 && SKV::rank == 3,
                   "stag::multi_head_linear_attention: the inputs must be [batch, seq, d_model]",
                   SQ, SKV);
  if constexpr (SQ::rank != 3 || SKV::rank != 3) {
    return xq;
  } else {
    constexpr auto d = last_dim<SQ>;
    constexpr auto h = named_as<dims::heads, H>;
    constexpr bool same_d = dim_value<d>() == dim_value<last_dim<SKV>>();
    constexpr bool divides = dim_divides<d, h>;
    constexpr bool causal = F == LinearAttentionForm::causal;
    constexpr bool same_seq = !causal || dim_value<dim_at<SQ, 1>>() == dim_value<dim_at<SKV, 1>>();
    STAG_SHAPE_CHECK(
        same_d,
        "stag::multi_head_linear_attention: query and key/value inputs need the same d_model", SQ,
        SKV);
    STAG_SHAPE_CHECK(
        !same_d || divides,
        "stag::multi_head_linear_attention: d_model is not a multiple of the number of heads", SQ,
        Shape<H>);
    STAG_SHAPE_CHECK(same_seq,
                     "stag::multi_head_linear_attention: the causal form is self-attention; "
                     "query and key/value inputs need the same sequence",
                     SQ, SKV);
    if constexpr (!(same_d && divides && same_seq)) {
      return xq;
    } else {
      auto guard = s.enter();
      auto q = split_heads<h>(linear<d>(s / "w_q", xq, o.bias));
      auto k = split_heads<h>(linear<d>(s / "w_k", xkv, o.bias));
      auto v = split_heads<h>(linear<d>(s / "w_v", xkv, o.bias));
      auto a = [&] {
        if constexpr (causal)
          return causal_linear_attention(q, k, v, o.eps);
        else
          return linear_attention(q, k, v, o.eps);
      }();
      return linear<d>(s / "w_o", merge_heads(a), o.bias);
    }
  }
}

// ---- additive (Bahdanau) attention -----------------------------------------------------------

// Additive attention (Bahdanau et al. 2015) for query [B, Sq, Dq], keys [B, Sk, Dk] and values
// [B, Sk, Dv], with A units in the score:
//   score[b, i, j] = v_a . tanh(W_q q_i + W_k k_j + b_k)       -> scores [B, Sq, Sk]
//   weights = softmax over j (masked: `keep` true = attend)     -> weights [B, Sq, Sk]
//   out = weights @ values                                      -> out [B, Sq, Dv]
// Parameters: w_q.weight [A, Dq] (no bias), w_k.weight [A, Dk] and w_k.bias [A], v.weight
// [1, A] (no bias). `keep` is no_mask or a typed key mask, as for attention (padding_keep(keep)
// for a [B, Sk] padding mask); a fully masked query row gets zero weights. NOTE: the [B, Sq, Sk,
// A] tanh tensor is stored (for the gradient): Sq and Sk of RNN-era sentence lengths. PyTorch
// (the seq2seq tutorial's BahdanauAttention):
//   scores = v(torch.tanh(w_q(q).unsqueeze(2) + w_k(k).unsqueeze(1))).squeeze(-1)
//   weights = F.softmax(scores.masked_fill(~keep, -inf), -1); out = weights @ values
template <auto A, class SQ, class SK, class SV, DType T, class M>
constexpr auto additive_attention(Scope s, Tensor<SQ, T> query, Tensor<SK, T> keys,
                                  Tensor<SV, T> values, M keep) {
  constexpr bool ranks = SQ::rank == 3 && SK::rank == 3 && SV::rank == 3;
  STAG_SHAPE_CHECK(
      ranks, "stag::additive_attention: query, keys and values must be [batch, seq, dim]", SQ, SK);
  if constexpr (!ranks) {
    return detail::failed_attention(query);
  } else {
    constexpr bool kv = dim_value<dim_at<SK, 1>>() == dim_value<dim_at<SV, 1>>();
    STAG_SHAPE_CHECK(kv, "stag::additive_attention: keys and values need the same length", SK, SV);
    constexpr bool mask_ok = STAG_CHECK_ATTENTION_MASK("stag::additive_attention", M, SQ, SK);
    if constexpr (!(kv && mask_ok)) {
      return detail::failed_attention(query);
    } else {
      // snippet-begin: docs-additive-attention
      auto guard = s.enter();
      auto pq = linear<A>(s / "w_q", query, false);             // [B, Sq, A]
      auto pk = linear<A>(s / "w_k", keys);                     // [B, Sk, A]
      auto e = tanh(unsqueeze<2>(pq) + unsqueeze<1>(pk));       // [B, Sq, Sk, A]
      auto scores = squeeze<-1>(linear<1>(s / "v", e, false));  // [B, Sq, Sk]
      auto w = [&] {
        if constexpr (std::is_same_v<M, NoMask>)
          return softmax<-1>(scores);
        else
          return softmax<-1>(scores, keep.values);
      }();
      w = w.named("weights");
      auto out = matmul(w, values);
      return Attention<decltype(out), decltype(w)>{out, w};
      // snippet-end: docs-additive-attention
    }
  }
}

}  // namespace stag

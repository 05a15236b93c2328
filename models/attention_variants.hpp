// Attention variants of the articles as score_mod / mask_mod functions of the fused attention op
// (ops/attention/mods.hpp), so each runs in the tiled kernel with O(S d) memory, its masked
// tiles skipped, and its learned tensors trained through the kernel's backward pass:
//
//   score_mods   alibi (Press et al. 2022), shaw_relative<K> (Shaw et al. 2018: a learned bias
//                per head and distance clipped to [-K, K]), t5_relative<Buckets, MaxDistance,
//                Bidirectional> (Raffel et al. 2020: log-spaced distance buckets), softcap<C>
//                (Gemma 2: C tanh(s / C))
//   mask_mods    sliding_window<W> (causal, the W latest keys; the built-in
//                AttnMask::sliding_window is the same and is skipped analytically),
//                sliding_window_of (the same with the width a [] i32 tensor), document
//                (queries see keys of their own document), prefix_lm (the first prefix(b)
//                positions of row b are seen by every query, the rest causally), strided<L>
//                (Child et al. 2019: the L latest keys and every L-th key before them)
//
// and a layer that puts any of them between the usual projections:
//
//   flex_self_attention<H>(s, x [B, S, D], score_mod(...) | no_score_mod, mask_mod(...) |
//                          no_mask_mod, {.mask = AttnMask::causal}, AttentionOptions)
//   alibi_slopes<H>(g) -> [H]: 2^(-8 (h + 1) / H), the slopes of ALiBi
//   relative_bias_table<Rows, H>(s) -> [Rows, H]: a learned parameter "rel_bias" (zeros)
//
// q_idx and kv_idx are raw positions (query q of a [B, H, Sq, Dk] input is q_idx = q), so the
// distance functions assume Sq == Sk, as in self-attention. PyTorch: torch.nn.attention.flex_
// attention with the same score_mod / mask_mod, written over tensors instead of scalars.
#pragma once

#include <algorithm>
#include <cmath>

#include <stag/models/attention.hpp>

namespace stag {
namespace variants {

// score - m_h (q - kv): a linear penalty on the distance, per head.
inline constexpr auto alibi = [](auto s, auto, auto h, auto q, auto kv, auto slopes) {
  return s - slopes(h) * (q - kv);
};

template <std::int64_t K>
inline constexpr auto shaw_relative = [](auto s, auto, auto h, auto q, auto kv, auto table) {
  return s + table(std::clamp<std::int64_t>(kv - q, -K, K) + K, h);
};

// T5's bucket of the relative position kv - q: exact for small distances, log-spaced up to
// MaxDistance, the last bucket beyond; with Bidirectional, half the buckets for keys after the
// query.
template <int Buckets, int MaxDistance, bool Bidirectional>
inline std::int64_t t5_bucket(std::int64_t rel) {
  std::int64_t n = Buckets, bucket = 0;
  if (Bidirectional) {
    n /= 2;
    if (rel > 0) bucket += n;
    rel = rel < 0 ? -rel : rel;
  } else {
    rel = rel < 0 ? -rel : 0;  // only keys before the query are distinguished
  }
  const std::int64_t exact = n / 2;
  if (rel < exact) return bucket + rel;
  const double far = std::log(static_cast<double>(rel) / static_cast<double>(exact)) /
                     std::log(static_cast<double>(MaxDistance) / static_cast<double>(exact)) *
                     static_cast<double>(n - exact);
  return bucket + std::min<std::int64_t>(exact + static_cast<std::int64_t>(far), n - 1);
}
template <int Buckets, int MaxDistance, bool Bidirectional>
inline constexpr auto t5_relative = [](auto s, auto, auto h, auto q, auto kv, auto table) {
  return s + table(t5_bucket<Buckets, MaxDistance, Bidirectional>(kv - q), h);
};

// NOTE: an integer cap (a double template argument needs clang 18).
template <int C>
inline constexpr auto softcap = [](auto s, auto...) { return C * tanh(s / C); };

template <std::int64_t W>
inline constexpr auto sliding_window =
    [](auto, auto, auto q, auto kv) { return kv <= q && q - kv < W; };

// The same window with its width a value of the step: `width` is a [] i32 tensor (an input,
// so one compiled graph serves every width). Its tiles are skipped through the block mask,
// computed at the start of each step because the mask reads a tensor.
inline constexpr auto sliding_window_of = [](auto, auto, auto q, auto kv, auto width) {
  return kv <= q && q - kv < width();
};

inline constexpr auto document = [](auto b, auto, auto q, auto kv, auto docs) {
  return docs(b, q) == docs(b, kv);
};

inline constexpr auto prefix_lm = [](auto b, auto, auto q, auto kv, auto prefix) {
  return kv <= q || kv < prefix(b);
};

template <std::int64_t L>
inline constexpr auto strided =
    [](auto, auto, auto q, auto kv) { return kv <= q && (q - kv < L || (q - kv) % L == 0); };

}  // namespace variants

inline constexpr ScoreModFn<"", attn::NoScore> no_score_mod{};
inline constexpr MaskModFn<"", attn::NoMask> no_mask_mod{};

// ALiBi's slopes [H]: m_h = 2^(-8 (h + 1) / H), a constant of the graph.
template <auto H, DType T = DType::f32>
constexpr auto alibi_slopes(Builder& g) {
  static_assert(dim_value<H>().is_static(), "stag::alibi_slopes: the number of heads is static");
  constexpr double step = -8.0 * 0.69314718055994530942 / static_cast<double>(dim_value<H>().coef);
  auto h = cast<T>(positions<H>(g, 1));  // 1 .. H
  return exp(h * step);
}

// A learned bias table [Rows, H] (rows: clipped distances or buckets), zero at the start.
template <auto Rows, auto H, DType T = DType::f32>
constexpr auto relative_bias_table(Scope s) {
  return param<Shape<Rows, H>, T>(s, "rel_bias", {Init::zeros, 0, 0, false});
}

// Multi-head self-attention with a score_mod and a mask_mod on the fused op: q, k, v and output
// projections as multi_head_attention, then sdpa(q, k, v, score, mask, attn).
template <auto H, class S, DType T, class SM, class MM>
constexpr auto flex_self_attention(Scope s, Tensor<S, T> x, const SM& score, const MM& mask,
                                   SdpaOptions attn = {}, AttentionOptions o = {}) {
  constexpr auto d = last_dim<S>;
  constexpr auto h = named_as<dims::heads, H>;
  STAG_SHAPE_CHECK(S::rank == 3,
                   "stag::flex_self_attention: the input must be [batch, seq, d_model]", S, void);
  STAG_SHAPE_CHECK((dim_divides<d, h>),
                   "stag::flex_self_attention: d_model is not a multiple of the number of heads", S,
                   Shape<H>);
  if constexpr (!(S::rank == 3 && dim_divides<d, h>)) {
    return x;
  } else {
    auto guard = s.enter();
    auto q = split_heads<h>(linear<d>(s / "w_q", x, o.bias));
    auto k = split_heads<h>(linear<d>(s / "w_k", x, o.bias));
    auto v = split_heads<h>(linear<d>(s / "w_v", x, o.bias));
    if (attn.dropout == 0.0) attn.dropout = o.dropout;
    auto a = [&] {
      constexpr bool no_score = std::is_same_v<SM, ScoreModFn<"", attn::NoScore>>;
      constexpr bool no_mask = std::is_same_v<MM, MaskModFn<"", attn::NoMask>>;
      if constexpr (no_score && no_mask)
        return sdpa(q, k, v, attn);
      else if constexpr (no_score)
        return sdpa(q, k, v, mask, attn);
      else if constexpr (no_mask)
        return sdpa(q, k, v, score, attn);
      else
        return sdpa(q, k, v, score, mask, attn);
    }();
    return linear<d>(s / "w_o", merge_heads(a), o.bias);
  }
}

}  // namespace stag

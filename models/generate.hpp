// The decode-step graph of a language model (models/lm.hpp) with a key/value cache, so that a
// new token costs one pass over one position instead of a pass over the whole prefix. To cache
// another model, write its block the way cached_llm_block below mirrors llm_block, with the
// same parameter names, and check it against the full forward (models/test_generate.cpp).
//
// One graph serves prefill and decoding: ids [batch, chunk] are the `chunk` tokens at positions
// pos .. pos+chunk-1 (the whole prompt at pos 0, then one token per step), and each layer keeps
// k_cache / v_cache [batch, kv_heads, max_len, head_dim] as state tensors in the session's store.
// chunk, batch and max_len are symbols: the session binds batch and max_len once
// (SessionOptions::dims) and makes one plan per chunk length. In each layer the new tokens
// attend to the cached positions < pos and, causally, to each other, through one softmax over
// both parts; then cache_write stores their keys and values at pos (after every read: the
// planner runs a writer after the other readers of what it writes). Outputs: "logits"
// [batch, chunk, vocab]. Parameter names are those of language_model<C>, so its checkpoints load.
#pragma once

#include <limits>

#include <stag/models/lm.hpp>

namespace stag {

namespace dims {
STAG_SYMBOL(chunk);    // tokens fed in one decode step
STAG_SYMBOL(max_len);  // positions the key/value cache holds
}  // namespace dims

// What every layer of a decode step shares: the position input and what is derived from it.
struct DecodeContext {
  Tensor<Shape<1>, DType::i32> pos;                 // position of the step's first token
  Tensor<Shape<dims::chunk>, DType::i32> rope_pos;  // pos + 0 .. chunk-1
  // true = masked: key j > query i among the new tokens, and cached positions >= pos.
  Tensor<Shape<1, 1, 1, dims::chunk, dims::chunk>, DType::boolean> new_fill;
  Tensor<Shape<1, 1, 1, 1, dims::max_len>, DType::boolean> past_fill;
};

constexpr DecodeContext decode_context(Builder& g, Tensor<Shape<1>, DType::i32> pos) {
  using namespace dims;
  auto new_keep = causal_mask<chunk>(g);
  auto past_fill = le(pos, positions<max_len>(g));  // cache slot c is masked when c >= pos
  return DecodeContext{pos, pos + positions<chunk>(g),
                       unsqueeze<0>(unsqueeze<0>(unsqueeze<0>(!new_keep))),
                       unsqueeze<0>(unsqueeze<0>(unsqueeze<0>(unsqueeze<0>(past_fill))))};
}

// grouped_query_attention (models/attention.hpp) for new tokens x [B, chunk, D] over the cache.
// The H query heads are viewed as [B, KVH, H/KVH, chunk, Dh], so each group of query heads
// multiplies its key/value head directly (no copy of the cache per query head).
// NOTE: the two score blocks share one softmax: exp(s - m) / (sum_new + sum_past) with m the
// max over both, masked entries at -inf. A row always keeps its own token, so m is finite.
// Cached slots >= pos get weight exactly 0 and are never NaN (they start at zero and are only
// written with the model's keys and values).
template <auto H, auto KVH, class S, DType T>
constexpr auto cached_grouped_query_attention(Scope s, Tensor<S, T> x, const DecodeContext& c,
                                              double rope_theta) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto len = dim_at<S, 1>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto kvh = named_as<dims::kv_heads, KVH>;
  constexpr auto group = named_as<dims::group, dim_quotient<H, KVH>>;
  constexpr auto qh = prod<kvh, group>;  // as in grouped_query_attention
  constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, H>>;
  static_assert(dim_value<dh>().is_static(),
                "stag::cached_grouped_query_attention: the head dim must be static");
  constexpr double scale = 1.0 / cx::sqrt(static_cast<double>(dim_value<dh>().coef));
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  const RopeOpts ro{.theta = rope_theta};
  auto q =
      rope(split_heads<qh>(linear<d>(s / "q_proj", x, false)), c.rope_pos, ro);  // [B, H, T, Dh]
  auto k = rope(split_heads<kvh>(linear<prod<kvh, dh>>(s / "k_proj", x, false)), c.rope_pos,
                ro);  // [B, KVH, T, Dh]
  auto v = split_heads<kvh>(linear<prod<kvh, dh>>(s / "v_proj", x, false));
  auto k_cache = state<Shape<b, kvh, dims::max_len, dh>, T>(s, "k_cache");
  auto v_cache = state<Shape<b, kvh, dims::max_len, dh>, T>(s, "v_cache");
  auto q5 = view<b, kvh, group, len, dh>(q);
  auto s_new = masked_fill(matmul_nt(q5, unsqueeze<2>(k)) * scale, c.new_fill,
                           neg_inf);  // [B, KVH, G, T, T]
  auto s_past = masked_fill(matmul_nt(q5, unsqueeze<2>(k_cache)) * scale, c.past_fill,
                            neg_inf);  // [B, KVH, G, T, L]
  auto m = max<-1>(concat<-1>(max<-1>(s_new, keepdim), max<-1>(s_past, keepdim)),
                   keepdim);  // [B, KVH, G, T, 1]
  auto e_new = exp(s_new - m);
  auto e_past = exp(s_past - m);
  auto denom = sum<-1>(e_new, keepdim) + sum<-1>(e_past, keepdim);
  auto o = (matmul(e_new, unsqueeze<2>(v)) + matmul(e_past, unsqueeze<2>(v_cache))) /
           denom;  // [B, KVH, G, T, Dh]
  auto out = linear<d>(s / "o_proj", merge_heads(view<b, qh, len, dh>(o)), false);
  (void)cache_write(k_cache, k, c.pos).named("k_cache_write");
  (void)cache_write(v_cache, v, c.pos).named("v_cache_write");
  return out;
}

// llm_block (models/blocks.hpp) for new tokens over the cache; the same parameters.
template <auto H, auto KVH, auto Dff, class S, DType T>
constexpr auto cached_llm_block(Scope s, Tensor<S, T> x, const DecodeContext& c,
                                LlmBlockOptions o = {}) {
  auto guard = s.enter();
  x = x + cached_grouped_query_attention<H, KVH>(
              s / "self_attn", rms_norm_layer(s / "input_norm", x, o.eps), c, o.rope_theta);
  return x + swiglu<Dff>(s / "mlp", rms_norm_layer(s / "post_attention_norm", x, o.eps));
}

// One decode step of language_model<C>: inputs ids [batch, chunk] i32 and pos [1] i32; output
// and result "logits" [batch, chunk, vocab]. Dropout is off (inference).
template <const LmConfig& C>
constexpr auto lm_decode_step(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, chunk>, DType::i32>(g);
  auto pos = input<"pos", Shape<1>, DType::i32>(g);
  const DecodeContext c = decode_context(g, pos);
  auto x = token_embedding<C.vocab, C.d_model>(g / "embed_tokens", ids);
  const LlmBlockOptions bo{.dropout = 0.0, .rope_theta = C.rope_theta};
  for (int l = 0; l < C.layers; ++l)
    x = cached_llm_block<C.heads, C.kv_heads, C.d_ff>(g / "layers" / l, x, c, bo);
  return lm_logits<C>(g, rms_norm_layer(g / "norm", x, bo.eps)).named("logits").output("logits");
}

namespace detail {
template <const LmConfig& C>
struct LmDecodeStepFn {
  constexpr auto operator()(Builder& g) const { return lm_decode_step<C>(g); }
};
}  // namespace detail

// The decode-step graph of config C, built once at compile time.
template <const LmConfig& C>
inline constexpr auto lm_decode_graph = model(detail::LmDecodeStepFn<C>{});

}  // namespace stag

// The decode-step graph of a language model (models/lm.hpp) with a key/value cache, so that a
// new token costs one pass over one position instead of a pass over the whole prefix. To cache
// another model, write its block the way cached_llm_block below mirrors llm_block, with the
// same parameter names, and check it against the full forward (models/test_generate.cpp).
//
// One graph serves prefill and decoding: ids [batch, chunk] are the `chunk` tokens of each row
// at positions pos[b] .. pos[b]+chunk-1 (the prompts from 0, then one token per step), and each
// layer keeps k_cache / v_cache [batch, kv_heads, max_len, head_dim] as state tensors in the
// session's store. Each row has its own position, so the rows of a batch may be at different
// lengths (ragged prompts; rows padded at the right write padding past their end, which is
// never attended to and is overwritten by their next tokens). chunk, batch and max_len are
// symbols: the session binds batch and max_len once (SessionOptions::dims) and makes one plan
// per chunk length. In each layer the new keys and values are written at pos, then one fused
// attention op (ops/attention, sdpa over a cache) reads the cache up to each query's
// position; its cost grows with pos + chunk, not with max_len. The logits are computed only
// for the positions a step asks for: select [batch, outs, chunk] (one-hot rows; outs = 1 and the
// row's last token in a prefill, where the vocabulary head would otherwise be the largest matmul
// of the step) picks the final hidden states before the head, so "logits" is [batch, outs,
// vocab]. select_positions / select_all_positions (models/generator.hpp) make it. Parameter
// names are those of language_model<C>, so its checkpoints load.
#pragma once

#include <stag/models/lm.hpp>

namespace stag {

namespace dims {
STAG_SYMBOL(chunk);    // tokens fed in one decode step
STAG_SYMBOL(max_len);  // positions the key/value cache holds
STAG_SYMBOL(outs);     // positions of a decode step whose logits are computed
}  // namespace dims

// What every layer of a decode step shares: the position input and what is derived from it.
struct DecodeContext {
  // Per batch row: the cache position of the step's first token (-1: the row is inactive,
  // nothing is written or attended to; its logits are those of an empty context).
  Tensor<Shape<dims::batch>, DType::i32> pos;
  Tensor<Shape<dims::batch, dims::chunk>, DType::i32> rope_pos;  // pos[b] + 0 .. chunk-1
};

constexpr DecodeContext decode_context(Builder& g, Tensor<Shape<dims::batch>, DType::i32> pos) {
  using namespace dims;
  return DecodeContext{pos, unsqueeze<1>(pos) + positions<chunk>(g)};
}

// grouped_query_attention (models/attention.hpp) for new tokens x [B, chunk, D] over the cache:
// the new keys and values are written into the cache at each row's position (cache_write
// returns the cache after the write), then one fused attention op reads the cache, with query
// i of row b seeing positions <= pos[b] + i. The H query heads read their key/value head
// directly (no copy of the cache per query head), no score matrix is stored, and key tiles
// past a row's last position are skipped: a step costs O(chunk (pos + chunk)), not
// O(chunk max_len). Cache slots past a row's position may hold anything (padding tokens of a
// ragged prefill, or nothing yet): they are never attended to before they are overwritten.
template <auto H, auto KVH, class S, DType T>
constexpr auto cached_grouped_query_attention(Scope s, Tensor<S, T> x, const DecodeContext& c,
                                              double rope_theta, bool qkv_bias = false) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto kvh = named_as<dims::kv_heads, KVH>;
  constexpr auto group = named_as<dims::group, dim_quotient<H, KVH>>;
  constexpr auto qh = prod<kvh, group>;  // as in grouped_query_attention
  constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, H>>;
  STAG_SHAPE_CHECK(dim_value<dh>().is_static(),
                   "stag::cached_grouped_query_attention: the head dim must be static (input, "
                   "heads)",
                   S, Shape<H>);
  const RopeOpts ro{.theta = rope_theta};
  auto q = rope(split_heads<qh>(linear<d>(s / "q_proj", x, qkv_bias)), c.rope_pos,
                ro);  // [B, H, T, Dh]
  auto k = rope(split_heads<kvh>(linear<prod<kvh, dh>>(s / "k_proj", x, qkv_bias)), c.rope_pos,
                ro);  // [B, KVH, T, Dh]
  auto v = split_heads<kvh>(linear<prod<kvh, dh>>(s / "v_proj", x, qkv_bias));
  auto k_cache = state<Shape<b, kvh, dims::max_len, dh>, T>(s, "k_cache");
  auto v_cache = state<Shape<b, kvh, dims::max_len, dh>, T>(s, "v_cache");
  auto kc = cache_write(k_cache, k, c.pos).named("k_cache_write");  // [B, KVH, L, Dh]
  auto vc = cache_write(v_cache, v, c.pos).named("v_cache_write");
  auto o = sdpa(q, kc, vc, cache_positions(c.pos), {.mask = AttnMask::causal});  // [B, H, T, Dh]
  return linear<d>(s / "o_proj", merge_heads(o), false);
}

// llm_block (models/blocks.hpp) for new tokens over the cache; the same parameters.
template <auto H, auto KVH, auto Dff, class S, DType T>
constexpr auto cached_llm_block(Scope s, Tensor<S, T> x, const DecodeContext& c,
                                LlmBlockOptions o = {}) {
  auto guard = s.enter();
  x = x + cached_grouped_query_attention<H, KVH>(s / "self_attn",
                                                 rms_norm_layer(s / "input_norm", x, o.eps), c,
                                                 o.rope_theta, o.qkv_bias);
  return x + swiglu<Dff>(s / "mlp", rms_norm_layer(s / "post_attention_norm", x, o.eps));
}

// gpt2_block (models/blocks.hpp) for new tokens over the cache; the same parameters.
template <auto H, auto Dff, class S, DType T>
constexpr auto cached_gpt2_block(Scope s, Tensor<S, T> x, const DecodeContext& c,
                                 Gpt2BlockOptions o = {}) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto d = last_dim<S>;
  constexpr auto h = named_as<dims::heads, H>;
  constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, h>>;
  auto h1 = layer_norm_layer(s / "ln_1", x, o.eps);
  {
    Scope a = s / "attn";
    auto attn_guard = a.enter();
    auto [q, k, v] = gpt2_qkv<H>(a, h1);  // [B, H, T, Dh]
    auto k_cache = state<Shape<b, h, dims::max_len, dh>, T>(a, "k_cache");
    auto v_cache = state<Shape<b, h, dims::max_len, dh>, T>(a, "v_cache");
    auto kc = cache_write(k_cache, k, c.pos).named("k_cache_write");
    auto vc = cache_write(v_cache, v, c.pos).named("v_cache_write");
    auto out = sdpa(q, kc, vc, cache_positions(c.pos), {.mask = AttnMask::causal});
    x = x + linear_in_out<d>(a / "c_proj", merge_heads(out));
  }
  return gpt2_mlp_residual<Dff>(s, x, o);
}

// The final hidden states x [batch, chunk, D] of the positions `select` [batch, outs, chunk]
// picks (one-hot rows): [batch, outs, D]. A one-hot row's product is the picked row exactly
// (1 x + 0 y in f32).
template <class S>
constexpr auto select_positions_of(Builder& g, Tensor<S, DType::f32> x) {
  using namespace dims;
  auto select = input<"select", Shape<batch, outs, chunk>, DType::f32>(g);
  return matmul(select, x).named("selected");
}

// One decode step of language_model<C>: inputs ids [batch, chunk] i32, pos [batch] i32 (each
// row's position; -1: an inactive row) and select [batch, outs, chunk] f32 (the positions whose
// logits are wanted, one-hot); output and result "logits" [batch, outs, vocab]. Dropout is off
// (inference).
template <const LmConfig& C>
constexpr auto lm_decode_step(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, chunk>, DType::i32>(g);
  auto pos = input<"pos", Shape<batch>, DType::i32>(g);
  const DecodeContext c = decode_context(g, pos);
  if constexpr (C.arch == LmArch::gpt2) {
    // The learned positions of the new tokens: an inactive row's (pos -1) read row 0, unused.
    auto zero = Tensor<Shape<>, DType::i32>{&g, scalar(g, 0, DType::i32).id};
    auto at = where(lt(c.rope_pos, zero), 0.0, c.rope_pos);  // [B, chunk]
    constexpr int rows = C.max_positions > 0 ? C.max_positions : 1;
    auto x = token_embedding<C.vocab, C.d_model>(g / "wte", ids) +
             learned_positions_at<rows, C.d_model>(g / "wpe", at);
    for (int l = 0; l < C.layers; ++l)
      x = cached_gpt2_block<C.heads, C.d_ff>(g / "h" / l, x, c, {.eps = C.norm_eps});
    return lm_logits<C>(g, layer_norm_layer(g / "ln_f", select_positions_of(g, x), C.norm_eps))
        .named("logits")
        .output("logits");
  } else {
    auto x = token_embedding<C.vocab, C.d_model>(g / "embed_tokens", ids);
    const LlmBlockOptions bo{
        .dropout = 0.0, .rope_theta = C.rope_theta, .eps = C.norm_eps, .qkv_bias = C.qkv_bias};
    for (int l = 0; l < C.layers; ++l)
      x = cached_llm_block<C.heads, C.kv_heads, C.d_ff>(g / "layers" / l, x, c, bo);
    return lm_logits<C>(g, rms_norm_layer(g / "norm", select_positions_of(g, x), bo.eps))
        .named("logits")
        .output("logits");
  }
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

// Inference graphs of the encoder-decoder Transformer (models/transformer.hpp), for generation
// with caches: the training graph ends at the loss and would rerun the encoder and the whole
// target prefix for every new token.
//
// - transformer_encode<C>: inputs src [batch, src_seq] i32 and src_keep [batch, src_seq] bool;
//   output "memory" [batch, src_seq, d_model] (the encoder's output, after its final norm).
//   It also computes, once per source, each decoder layer's cross-attention keys and values
//   from the memory: the nodes "decoder.<l>.cross_attn.k_memory" and ".v_memory"
//   [batch, heads, src_seq, head_dim] (keep them: SessionOptions::keep).
// - transformer_decode_step<C>: inputs ids [batch, chunk] i32 (target tokens at positions
//   pos[b] .. pos[b]+chunk-1), pos [batch] i32 (-1: an inactive row) and src_keep [batch,
//   src_seq] bool; output "logits" [batch, chunk, tgt_vocab]. State per decoder layer: the
//   self-attention cache "decoder.<l>.self_attn.k_cache"/"v_cache" [batch, heads, max_len,
//   head_dim], and the cross-attention memory "decoder.<l>.cross_attn.k_memory"/"v_memory"
//   [batch, heads, src_seq, head_dim], copied in from the encode graph once per batch.
//
// Parameter names are those of transformer<C>, so its checkpoints load; dropout is off. Both
// graphs use the fused attention op: self-attention reads the cache up to each row's position
// (cost O(chunk (pos + chunk)) per layer), cross-attention reads the kept memory under the
// source padding mask. Seq2SeqGenerator (models/seq2seq_generator.hpp) runs them.
#pragma once

#include <stag/models/generate.hpp>
#include <stag/models/transformer.hpp>

namespace stag {

namespace detail {
// Sinusoidal positions at the positions `pos` [B, T] -> [B, T, D]: the values of
// sinusoidal_positions<D, len> at those rows, computed by the same operations.
template <auto D, class S>
constexpr auto sinusoidal_at(Builder& g, Tensor<S, DType::i32> pos) {
  constexpr auto b = dim_at<S, 0>;
  constexpr auto t = dim_at<S, 1>;
  constexpr auto half = dim_quotient<D, 2>;
  auto p = unsqueeze<-1>(cast<DType::f32>(pos));                              // [B, T, 1]
  auto i = unsqueeze<0>(unsqueeze<0>(cast<DType::f32>(positions<half>(g))));  // [1, 1, D/2]
  const double k = -2.0 * cx::log(10000.0) / static_cast<double>(dim_value<D>().coef);
  auto angle = p * exp(i * k);                                                 // [B, T, D/2]
  auto pe = concat<-1>(unsqueeze<-1>(sin(angle)), unsqueeze<-1>(cos(angle)));  // [B, T, D/2, 2]
  return view<b, t, D>(pe);
}

// The embedding table of the target side (the source one with a shared vocabulary).
template <const TransformerConfig& C>
constexpr auto target_table(Builder& g) {
  if constexpr (C.shared_vocab)
    return param<Shape<C.src_vocab, C.d_model>>(g / "src_embed", "weight", kEmbeddingInit);
  else
    return param<Shape<C.tgt_vocab, C.d_model>>(g / "tgt_embed", "weight", kEmbeddingInit);
}
}  // namespace detail

// multi_head_attention<H> (self-attention) of new tokens x [B, chunk, D] over a cache: the new
// keys and values are written at each row's position, then the fused op reads the cache with
// query i of row b seeing positions <= pos[b] + i. The parameters of multi_head_attention.
template <auto H, class S, DType T>
constexpr auto cached_self_attention(Scope s, Tensor<S, T> x, const DecodeContext& c) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto h = named_as<dims::heads, H>;
  constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, h>>;
  auto q = split_heads<h>(linear<d>(s / "w_q", x));
  auto k = split_heads<h>(linear<d>(s / "w_k", x));
  auto v = split_heads<h>(linear<d>(s / "w_v", x));
  auto kc = cache_write(state<Shape<b, h, dims::max_len, dh>, T>(s, "k_cache"), k, c.pos)
                .named("k_cache_write");
  auto vc = cache_write(state<Shape<b, h, dims::max_len, dh>, T>(s, "v_cache"), v, c.pos)
                .named("v_cache_write");
  auto o = sdpa(q, kc, vc, cache_positions(c.pos), {.mask = AttnMask::causal});
  return linear<d>(s / "w_o", merge_heads(o));
}

// multi_head_attention<H> (cross-attention) of y [B, chunk, D] over the encoder memory's keys
// and values, kept as state (k_memory, v_memory [B, H, src_seq, Dh]); keep: [B, 1, src_seq].
template <auto H, class S, DType T, class M>
constexpr auto memory_attention(Scope s, Tensor<S, T> y, M keep) {
  auto guard = s.enter();
  constexpr auto b = dim_at<S, 0>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto h = named_as<dims::heads, H>;
  constexpr auto dh = named_as<dims::head_dim, dim_quotient<d, h>>;
  auto q = split_heads<h>(linear<d>(s / "w_q", y));
  auto km = state<Shape<b, h, dims::src_seq, dh>, T>(s, "k_memory");
  auto vm = state<Shape<b, h, dims::src_seq, dh>, T>(s, "v_memory");
  auto a = attention(q, km, vm, detail::heads_mask(keep));
  return linear<d>(s / "w_o", merge_heads(a.out));
}

// decoder_layer<H, Dff> (models/blocks.hpp) for new target tokens, without dropout.
template <auto H, auto Dff, class S, DType T, class M>
constexpr auto cached_decoder_layer(Scope s, Tensor<S, T> y, const DecodeContext& c, M cross_keep,
                                    LayerOptions o) {
  auto guard = s.enter();
  if (o.norm == NormPlacement::post) {
    y = layer_norm_layer(s / "norm1", y + cached_self_attention<H>(s / "self_attn", y, c), o.eps);
    y = layer_norm_layer(s / "norm2", y + memory_attention<H>(s / "cross_attn", y, cross_keep),
                         o.eps);
    return layer_norm_layer(s / "norm3", y + feed_forward<Dff>(s / "ffn", y, o.act, 0.0), o.eps);
  }
  y = y + cached_self_attention<H>(s / "self_attn", layer_norm_layer(s / "norm1", y, o.eps), c);
  y = y +
      memory_attention<H>(s / "cross_attn", layer_norm_layer(s / "norm2", y, o.eps), cross_keep);
  return y + feed_forward<Dff>(s / "ffn", layer_norm_layer(s / "norm3", y, o.eps), o.act, 0.0);
}

template <const TransformerConfig& C>
constexpr auto transformer_encode(Builder& g) {
  using namespace dims;
  auto src = input<"src", Shape<batch, src_seq>, DType::i32>(g);
  auto src_keep = keep_input<"src_keep", Shape<batch, src_seq>>(g);
  const LayerOptions lo{.norm = C.pre_norm ? NormPlacement::pre : NormPlacement::post,
                        .dropout = 0.0};
  auto src_table = param<Shape<C.src_vocab, C.d_model>>(g / "src_embed", "weight", kEmbeddingInit);
  constexpr double scale = cx::sqrt(static_cast<double>(C.d_model));
  auto x = embedding(src, src_table) * scale + sinusoidal_positions<C.d_model, src_seq>(g);
  const auto enc_keep = padding_keep(src_keep);
  for (int l = 0; l < C.enc_layers; ++l)
    x = encoder_layer<C.heads, C.d_ff>(g / "encoder" / l, x, enc_keep, lo);
  if (C.pre_norm) x = layer_norm_layer(g / "encoder" / "norm", x);
  // Each decoder layer's cross-attention keys and values, with its parameters.
  constexpr auto h = named_as<heads, C.heads>;
  for (int l = 0; l < C.dec_layers; ++l) {
    Scope s = g / "decoder" / l / "cross_attn";
    auto guard = s.enter();
    (void)split_heads<h>(linear<C.d_model>(s / "w_k", x)).named("k_memory");
    (void)split_heads<h>(linear<C.d_model>(s / "w_v", x)).named("v_memory");
  }
  return x.named("memory").output("memory");
}

template <const TransformerConfig& C>
constexpr auto transformer_decode_step(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, chunk>, DType::i32>(g);
  auto pos = input<"pos", Shape<batch>, DType::i32>(g);
  auto src_keep = keep_input<"src_keep", Shape<batch, src_seq>>(g);
  const DecodeContext c = decode_context(g, pos);
  const LayerOptions lo{.norm = C.pre_norm ? NormPlacement::pre : NormPlacement::post,
                        .dropout = 0.0};
  auto table = detail::target_table<C>(g);
  constexpr double scale = cx::sqrt(static_cast<double>(C.d_model));
  auto y = embedding(ids, table) * scale + detail::sinusoidal_at<C.d_model>(g, c.rope_pos);
  const auto cross_keep = padding_keep(src_keep);
  for (int l = 0; l < C.dec_layers; ++l)
    y = cached_decoder_layer<C.heads, C.d_ff>(g / "decoder" / l, y, c, cross_keep, lo);
  if (C.pre_norm) y = layer_norm_layer(g / "decoder" / "norm", y);
  auto logits = [&] {
    if constexpr (C.shared_vocab)
      return matmul_nt(y, table);
    else
      return linear<C.tgt_vocab>(g / "generator", y);
  }();
  return logits.named("logits").output("logits");
}

namespace detail {
template <const TransformerConfig& C>
struct TransformerEncodeFn {
  constexpr auto operator()(Builder& g) const { return transformer_encode<C>(g); }
};
template <const TransformerConfig& C>
struct TransformerDecodeStepFn {
  constexpr auto operator()(Builder& g) const { return transformer_decode_step<C>(g); }
};
}  // namespace detail

// The two graphs of config C, built once at compile time.
template <const TransformerConfig& C>
inline constexpr auto transformer_encode_graph = model(detail::TransformerEncodeFn<C>{});
template <const TransformerConfig& C>
inline constexpr auto transformer_decode_graph = model(detail::TransformerDecodeStepFn<C>{});

}  // namespace stag

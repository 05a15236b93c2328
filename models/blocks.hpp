// Transformer layers: the encoder layer in Post-LN ("Attention Is All You Need") and Pre-LN
// form, the decoder layer (masked self-attention, cross-attention, feed-forward), and the
// minimind-style decoder block (RMSNorm, grouped-query attention with RoPE, SwiGLU).
#pragma once

#include <tuple>

#include <stag/models/attention.hpp>

namespace stag {

// snippet-begin: docs-encoder-1
enum class NormPlacement : std::uint8_t {
  post,  // x = norm(x + sublayer(x)): the original Transformer
  pre,   // x = x + sublayer(norm(x)): trains more stably when deep
};

struct LayerOptions {
  NormPlacement norm = NormPlacement::post;
  double dropout = 0.1;  // on sublayer outputs, attention weights and the FFN's hidden layer
  Activation act = Activation::relu;
  double eps = 1e-5;
};
// snippet-end: docs-encoder-1

// LayerNorm over the last dim with affine weight and bias. PyTorch: nn.LayerNorm(D).
template <class S, DType T>
constexpr auto layer_norm_layer(Scope s, Tensor<S, T> x, double eps = 1e-5) {
  constexpr auto d = last_dim<S>;
  STAG_SHAPE_CHECK(dim_value<d>().is_static(),
                   "stag::layer_norm_layer: a parameter would have a symbolic dim (weight and "
                   "bias [d] from the last dim of the input); normalise over a static dim",
                   S, Shape<d>);
  if constexpr (!dim_value<d>().is_static())
    return x;
  else
    return layer_norm(x, param<Shape<d>, T>(s, "weight", kOnes),
                      param<Shape<d>, T>(s, "bias", kZeros), eps);
}

// RMSNorm with a gain. minimind: RMSNorm(dim, eps).
template <class S, DType T>
constexpr auto rms_norm_layer(Scope s, Tensor<S, T> x, double eps = 1e-6) {
  STAG_SHAPE_CHECK(dim_value<last_dim<S>>().is_static(),
                   "stag::rms_norm_layer: a parameter would have a symbolic dim (weight [d] from "
                   "the last dim of the input); normalise over a static dim",
                   S, Shape<last_dim<S>>);
  if constexpr (!dim_value<last_dim<S>>().is_static())
    return x;
  else
    return rms_norm(x, param<Shape<last_dim<S>>, T>(s, "weight", kOnes), eps);
}

// snippet-begin: docs-encoder-2
// One encoder layer: self-attention and feed-forward sublayers with residuals and LayerNorm.
// keep: [B|1, S|1, S] (padding_keep of a [B, S] mask) or no_mask.
template <auto H, auto Dff, class S, DType T, class M>
constexpr auto encoder_layer(Scope s, Tensor<S, T> x, M keep, LayerOptions o = {}) {
  STAG_SHAPE_CHECK(S::rank == 3, "stag::encoder_layer: the input must be [batch, seq, d_model]", S,
                   void);
  STAG_SHAPE_CHECK((dim_divides<last_dim<S>, H>),
                   "stag::encoder_layer: d_model is not a multiple of the number of heads", S,
                   Shape<H>);
  if constexpr (!STAG_CHECK_ATTENTION_MASK("stag::encoder_layer", M, S, S) ||
                !dim_divides<last_dim<S>, H>)
    return x;
  else {
    auto guard = s.enter();
    const AttentionOptions ao{.dropout = o.dropout};
    if (o.norm == NormPlacement::post) {
      x = layer_norm_layer(
          s / "norm1",
          x + maybe_dropout(multi_head_attention<H>(s / "self_attn", x, x, keep, ao).out,
                            o.dropout),
          o.eps);
      return layer_norm_layer(
          s / "norm2",
          x + maybe_dropout(feed_forward<Dff>(s / "ffn", x, o.act, o.dropout), o.dropout), o.eps);
    }
    auto h = layer_norm_layer(s / "norm1", x, o.eps);
    x = x + maybe_dropout(multi_head_attention<H>(s / "self_attn", h, h, keep, ao).out, o.dropout);
    return x + maybe_dropout(feed_forward<Dff>(s / "ffn", layer_norm_layer(s / "norm2", x, o.eps),
                                               o.act, o.dropout),
                             o.dropout);
  }
}
// snippet-end: docs-encoder-2

// snippet-begin: docs-encoder-3
// One decoder layer: masked self-attention over the target (self_keep: causal & padding,
// [B|1, T, T]), cross-attention to the encoder memory (cross_keep: [B, 1, S]), feed-forward.
template <auto H, auto Dff, class SY, class SM, DType T, class M1, class M2>
constexpr auto decoder_layer(Scope s, Tensor<SY, T> y, Tensor<SM, T> memory, M1 self_keep,
                             M2 cross_keep, LayerOptions o = {}) {
  STAG_SHAPE_CHECK(SY::rank == 3 && SM::rank == 3,
                   "stag::decoder_layer: the target and the memory must be [batch, seq, d_model]",
                   SY, SM);
  STAG_SHAPE_CHECK(dim_value<last_dim<SY>>() == dim_value<last_dim<SM>>(),
                   "stag::decoder_layer: the target and the encoder memory need the same d_model",
                   SY, SM);
  STAG_SHAPE_CHECK((dim_divides<last_dim<SY>, H>),
                   "stag::decoder_layer: d_model is not a multiple of the number of heads", SY,
                   Shape<H>);
  constexpr bool self_ok = STAG_CHECK_ATTENTION_MASK("stag::decoder_layer (self_keep)", M1, SY, SY);
  constexpr bool cross_ok =
      self_ok && STAG_CHECK_ATTENTION_MASK("stag::decoder_layer (cross_keep)", M2, SY, SM);
  if constexpr (!self_ok || !cross_ok || !dim_divides<last_dim<SY>, H> ||
                !(dim_value<last_dim<SY>>() == dim_value<last_dim<SM>>()))
    return y;
  else {
    auto guard = s.enter();
    const AttentionOptions ao{.dropout = o.dropout};
    if (o.norm == NormPlacement::post) {
      y = layer_norm_layer(
          s / "norm1",
          y + maybe_dropout(multi_head_attention<H>(s / "self_attn", y, y, self_keep, ao).out,
                            o.dropout),
          o.eps);
      y = layer_norm_layer(
          s / "norm2",
          y + maybe_dropout(
                  multi_head_attention<H>(s / "cross_attn", y, memory, cross_keep, ao).out,
                  o.dropout),
          o.eps);
      return layer_norm_layer(
          s / "norm3",
          y + maybe_dropout(feed_forward<Dff>(s / "ffn", y, o.act, o.dropout), o.dropout), o.eps);
    }
    auto h = layer_norm_layer(s / "norm1", y, o.eps);
    y = y +
        maybe_dropout(multi_head_attention<H>(s / "self_attn", h, h, self_keep, ao).out, o.dropout);
    h = layer_norm_layer(s / "norm2", y, o.eps);
    y = y + maybe_dropout(multi_head_attention<H>(s / "cross_attn", h, memory, cross_keep, ao).out,
                          o.dropout);
    return y + maybe_dropout(feed_forward<Dff>(s / "ffn", layer_norm_layer(s / "norm3", y, o.eps),
                                               o.act, o.dropout),
                             o.dropout);
  }
}
// snippet-end: docs-encoder-3

// snippet-begin: docs-lm-2
struct LlmBlockOptions {
  double dropout = 0.0;
  double rope_theta = 1e6;  // minimind's default
  double eps = 1e-5;
  bool qkv_bias = false;  // biases in q, k, v (Qwen2)
};

// minimind's decoder block: x + attn(rms(x)), then x + swiglu(rms(x)); causal via keep.
template <auto H, auto KVH, auto Dff, class S, DType T, class M>
constexpr auto llm_block(Scope s, Tensor<S, T> x, M keep, LlmBlockOptions o = {}) {
  // Checked here, before grouped_query_attention is built: rope rotates pairs of the head dim.
  constexpr bool groups = dim_divides<H, KVH>;
  STAG_SHAPE_CHECK(groups,
                   "stag::llm_block: the number of heads is not a multiple of the number of "
                   "key/value heads (heads, kv_heads)",
                   Shape<H>, Shape<KVH>);
  constexpr bool divides = groups && dim_divides<last_dim<S>, H>;
  STAG_SHAPE_CHECK(!groups || divides,
                   "stag::llm_block: d_model is not a multiple of the number of heads", S,
                   Shape<H>);
  constexpr bool even = [] {
    if constexpr (divides) {
      constexpr DimV dh = dim_value<dim_quotient<last_dim<S>, H>>();
      return !dh.is_static() || dh.coef % 2 == 0;
    } else {
      return true;
    }
  }();
  STAG_SHAPE_CHECK(even,
                   "stag::llm_block: rope needs an even head dim, but d_model / heads is odd "
                   "(d_model, heads)",
                   S, Shape<H>);
  if constexpr (!groups || !divides || !even)
    return x;
  else {
    auto guard = s.enter();
    const AttentionOptions ao{.dropout = o.dropout,
                              .bias = false,
                              .qkv_bias = o.qkv_bias,
                              .rope = true,
                              .rope_theta = o.rope_theta};
    x = x + maybe_dropout(grouped_query_attention<H, KVH>(
                              s / "self_attn", rms_norm_layer(s / "input_norm", x, o.eps), keep, ao)
                              .out,
                          o.dropout);
    return x +
           swiglu<Dff>(s / "mlp", rms_norm_layer(s / "post_attention_norm", x, o.eps), o.dropout);
  }
}
// snippet-end: docs-lm-2

// GPT-2's decoder block (Hugging Face's GPT2Block): x + attn(ln_1(x)), then
// x + mlp(ln_2(x)), LayerNorms with biases, every projection with a bias and its weight stored
// [in, out] (linear_in_out); q, k and v come from one projection (c_attn [D, 3D]) and are its
// three slices; the MLP is c_fc, GELU-tanh ("gelu_new"), c_proj. Causal via keep.
struct Gpt2BlockOptions {
  double dropout = 0.0;  // on the attention weights and both sublayer outputs
  double eps = 1e-5;     // of the LayerNorms (layer_norm_epsilon)
};

// q, k, v [B, H, S, D/H] of the fused projection c_attn (x [B, S, D] -> [B, S, 3D], q first).
template <auto H, class S, DType T>
constexpr auto gpt2_qkv(Scope s, Tensor<S, T> x) {
  constexpr auto h = named_as<dims::heads, H>;
  constexpr std::int64_t d = dim_value<last_dim<S>>().coef;
  auto qkv = linear_in_out<static_cast<int>(3 * d)>(s / "c_attn", x);
  return std::tuple{split_heads<h>(slice<2, 0, d>(qkv)), split_heads<h>(slice<2, d, 2 * d>(qkv)),
                    split_heads<h>(slice<2, 2 * d, 3 * d>(qkv))};
}

// The block's second half: x + c_proj(gelu_tanh(c_fc(ln_2(x)))), dropout on the sublayer.
template <auto Dff, class S, DType T>
constexpr auto gpt2_mlp_residual(Scope s, Tensor<S, T> x, const Gpt2BlockOptions& o) {
  auto h = layer_norm_layer(s / "ln_2", x, o.eps);
  Scope m = s / "mlp";
  auto guard = m.enter();
  auto f = gelu_tanh(linear_in_out<named_as<dims::d_ff, Dff>>(m / "c_fc", h));
  return x + maybe_dropout(linear_in_out<last_dim<S>>(m / "c_proj", f), o.dropout);
}

template <auto H, auto Dff, class S, DType T, class M>
constexpr auto gpt2_block(Scope s, Tensor<S, T> x, M keep, Gpt2BlockOptions o = {}) {
  STAG_SHAPE_CHECK(S::rank == 3, "stag::gpt2_block: the input must be [batch, seq, d_model]", S,
                   void);
  constexpr bool fixed = dim_value<last_dim<S>>().is_static();
  STAG_SHAPE_CHECK(fixed, "stag::gpt2_block: d_model must be static", S, void);
  constexpr bool divides = fixed && dim_divides<last_dim<S>, H>;
  STAG_SHAPE_CHECK(!fixed || divides,
                   "stag::gpt2_block: d_model is not a multiple of the number of heads", S,
                   Shape<H>);
  constexpr bool mask_ok = STAG_CHECK_ATTENTION_MASK("stag::gpt2_block", M, S, S);
  if constexpr (S::rank != 3 || !divides || !mask_ok) {
    return x;
  } else {
    auto guard = s.enter();
    constexpr auto d = last_dim<S>;
    auto h1 = layer_norm_layer(s / "ln_1", x, o.eps);
    {
      Scope a = s / "attn";
      auto attn_guard = a.enter();
      auto [q, k, v] = gpt2_qkv<H>(a, h1);
      auto out = attention(q, k, v, detail::heads_mask(keep), o.dropout).out;
      x = x + maybe_dropout(linear_in_out<d>(a / "c_proj", merge_heads(out)), o.dropout);
    }
    return gpt2_mlp_residual<Dff>(s, x, o);
  }
}

// snippet-begin: docs-encoder-4
// Mean over the kept positions of x [B, S, D] with keep [B, S] -> [B, D]; a row with no kept
// position gives zeros (its count is taken as 1).
template <class S, DType T, class SK>
constexpr auto masked_mean(Tensor<S, T> x, Tensor<SK, DType::boolean> keep) {
  auto w = unsqueeze<-1>(cast<T>(keep));                  // [B, S, 1]
  auto count = sum<1>(w);                                 // [B, 1]
  auto safe = where(eq(count, count * 0.0), 1.0, count);  // NOTE: no division by zero
  return sum<1>(x * w) / safe;
}
// snippet-end: docs-encoder-4
// The same with a typed token mask: a keep mask; a padding mask is refused (flip it with ~).
template <class S, DType T, class SK, MaskPolarity P>
constexpr auto masked_mean(Tensor<S, T> x, TokenMask<SK, P> keep) {
  STAG_SHAPE_CHECK(P == MaskPolarity::keep,
                   "stag::masked_mean: averages where its mask is true, but this is a padding "
                   "mask (true at padding); pass ~pad (mask, polarity)",
                   SK, detail::polarity_shown<P>);
  return masked_mean(x, detail::values_as<MaskPolarity::keep>(keep));
}

}  // namespace stag

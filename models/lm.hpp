// A decoder-only language model in the style of minimind: token embedding, N blocks of
// RMSNorm + grouped-query attention with rotary positions (causal) + RMSNorm + SwiGLU, a final
// RMSNorm and an output projection tied to the embedding.
// Inputs: ids [batch, seq] i32, targets [batch, seq] i32 (next tokens, -100 where ignored).
// Outputs: the loss and "logits" [batch, seq, vocab].
#pragma once

#include <boost/hana/adapt_struct.hpp>

#include <stag/models/blocks.hpp>

namespace stag {

// snippet-begin: docs-lm-1
struct LmConfig {
  int vocab = 4096;
  int d_model = 256;
  int heads = 8;
  int kv_heads = 2;
  int d_ff = 1024;
  int layers = 4;
  double dropout = 0.0;
  double label_smoothing = 0.0;  // of the loss (cross_entropy's CrossEntropyOptions)
  double rope_theta = 1e6;
  bool tie_embeddings = true;
  double norm_eps = 1e-5;  // of every RMSNorm (Hugging Face's rms_norm_eps)
  bool qkv_bias = false;   // biases in the q, k, v projections (Qwen2)
};

// The trunk: ids [B, S] -> final hidden states [B, S, D] (shared with generation).
template <const LmConfig& C, class S>
constexpr auto lm_trunk(Builder& g, Tensor<S, DType::i32> ids) {
  using namespace dims;
  auto x = maybe_dropout(token_embedding<C.vocab, C.d_model>(g / "embed_tokens", ids), C.dropout);
  const auto keep = causal_keep<dim_at<S, 1>>(g);  // [1, S, S]
  const LlmBlockOptions bo{
      .dropout = C.dropout, .rope_theta = C.rope_theta, .eps = C.norm_eps, .qkv_bias = C.qkv_bias};
  for (int l = 0; l < C.layers; ++l)
    x = llm_block<C.heads, C.kv_heads, C.d_ff>(g / "layers" / l, x, keep, bo);
  return rms_norm_layer(g / "norm", x, bo.eps);
}

template <const LmConfig& C, class S>
constexpr auto lm_logits(Builder& g, Tensor<S, DType::f32> h) {
  if constexpr (C.tie_embeddings) {
    const int table = g.view().find("embed_tokens.weight");
    return matmul_nt(h, Tensor<Shape<C.vocab, C.d_model>>{&g, table});
  } else {
    return linear<C.vocab>(g / "lm_head", h, false);
  }
}

template <const LmConfig& C>
constexpr auto language_model(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto targets = input<"targets", Shape<batch, seq>, DType::i32>(g);
  auto logits = lm_logits<C>(g, lm_trunk<C>(g, ids)).named("logits").output("logits");
  return cross_entropy(logits, targets, {.label_smoothing = C.label_smoothing});
}
// snippet-end: docs-lm-1

}  // namespace stag

BOOST_HANA_ADAPT_STRUCT(stag::LmConfig, vocab, d_model, heads, kv_heads, d_ff, layers, dropout,
                        label_smoothing, rope_theta, tie_embeddings, norm_eps, qkv_bias);

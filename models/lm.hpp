// A decoder-only language model in one of two layouts (LmConfig::arch):
// - llama (minimind, Llama, SmolLM, Qwen2): token embedding, N blocks of RMSNorm +
//   grouped-query attention with rotary positions (causal) + RMSNorm + SwiGLU, a final RMSNorm
//   and an output projection, tied to the embedding or not;
// - gpt2 (GPT-2): token and learned position embeddings, N blocks of LayerNorm + multi-head
//   attention from one fused q/k/v projection + LayerNorm + GELU-tanh MLP (every projection
//   with a bias, weights stored [in, out] as Hugging Face's Conv1D), a final LayerNorm and a
//   head tied to the token embedding.
// Inputs: ids [batch, seq] i32, targets [batch, seq] i32 (next tokens, -100 where ignored).
// Outputs: the loss and "logits" [batch, seq, vocab].
#pragma once

#include <optional>
#include <string_view>

#include <boost/hana/adapt_struct.hpp>

#include <stag/models/blocks.hpp>

namespace stag {

// snippet-begin: docs-lm-1
enum class LmArch : std::uint8_t {
  llama,  // RMSNorm, GQA with RoPE, SwiGLU (minimind, Llama, SmolLM, Qwen2)
  gpt2,   // learned positions, LayerNorm with bias, fused q/k/v, GELU-tanh (GPT-2)
};

constexpr std::string_view lm_arch_name(LmArch a) {
  return a == LmArch::gpt2 ? "gpt2" : "llama";
}
constexpr std::optional<LmArch> lm_arch_from_name(std::string_view s) {
  if (s == "llama") return LmArch::llama;
  if (s == "gpt2") return LmArch::gpt2;
  return std::nullopt;
}

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
  LmArch arch = LmArch::llama;
  // gpt2: rows of the learned position table (n_positions), the longest sequence it runs; with
  // it, kv_heads = heads, rope_theta = 0 (no rotary positions), norm_eps of the LayerNorms.
  int max_positions = 0;
};

// The trunk: ids [B, S] -> final hidden states [B, S, D] (shared with generation).
template <const LmConfig& C, class S>
constexpr auto lm_trunk(Builder& g, Tensor<S, DType::i32> ids) {
  using namespace dims;
  const auto keep = causal_keep<dim_at<S, 1>>(g);  // [1, S, S]
  if constexpr (C.arch == LmArch::gpt2) {
    STAG_SHAPE_CHECK(C.max_positions > 0,
                     "stag::lm_trunk: a gpt2 config needs max_positions (the rows of its "
                     "position table)",
                     S, void);
    constexpr int rows = C.max_positions > 0 ? C.max_positions : 1;
    auto x = maybe_dropout(token_embedding<C.vocab, C.d_model>(g / "wte", ids) +
                               learned_positions<rows, C.d_model, dim_at<S, 1>>(g / "wpe"),
                           C.dropout);
    for (int l = 0; l < C.layers; ++l)
      x = gpt2_block<C.heads, C.d_ff>(g / "h" / l, x, keep,
                                      {.dropout = C.dropout, .eps = C.norm_eps});
    return layer_norm_layer(g / "ln_f", x, C.norm_eps);
  } else {
    auto x = maybe_dropout(token_embedding<C.vocab, C.d_model>(g / "embed_tokens", ids), C.dropout);
    const LlmBlockOptions bo{.dropout = C.dropout,
                             .rope_theta = C.rope_theta,
                             .eps = C.norm_eps,
                             .qkv_bias = C.qkv_bias};
    for (int l = 0; l < C.layers; ++l)
      x = llm_block<C.heads, C.kv_heads, C.d_ff>(g / "layers" / l, x, keep, bo);
    return rms_norm_layer(g / "norm", x, bo.eps);
  }
}

// The name of the token embedding (the tied head's table).
constexpr std::string_view lm_embedding_name(LmArch a) {
  return a == LmArch::gpt2 ? "wte.weight" : "embed_tokens.weight";
}

template <const LmConfig& C, class S>
constexpr auto lm_logits(Builder& g, Tensor<S, DType::f32> h) {
  if constexpr (C.tie_embeddings) {
    const int table = g.view().find(lm_embedding_name(C.arch));
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
                        label_smoothing, rope_theta, tie_embeddings, norm_eps, qkv_bias, arch,
                        max_positions);

// The full encoder-decoder Transformer of "Attention Is All You Need": embeddings scaled by
// sqrt(d_model) plus sinusoidal positions, N encoder and N decoder layers, an output
// projection; shared (tied) or separate vocabularies.
// Inputs: src [batch, src_seq] i32, src_keep [batch, src_seq] bool, tgt_in [batch, tgt_seq]
// i32 (shifted right, starting with <bos>), tgt_keep [batch, tgt_seq] bool, tgt_out [batch,
// tgt_seq] i32 (next tokens, -100 at padding). Outputs: the loss and "logits".
#pragma once

#include <boost/hana/adapt_struct.hpp>

#include <stag/models/blocks.hpp>

namespace stag {

// snippet-begin: docs-transformer-1
struct TransformerConfig {
  int src_vocab = 1000;
  int tgt_vocab = 1000;
  bool shared_vocab = false;  // one embedding table for both sides, tied to the output layer
  int d_model = 512;
  int heads = 8;
  int d_ff = 2048;
  int enc_layers = 6;
  int dec_layers = 6;
  double dropout = 0.1;
  double label_smoothing = 0.0;  // of the loss (cross_entropy's CrossEntropyOptions)
  bool pre_norm = true;
};
// snippet-end: docs-transformer-1

// snippet-begin: docs-transformer-2
template <const TransformerConfig& C>
constexpr auto transformer(Builder& g) {
  using namespace dims;
  static_assert(!C.shared_vocab || C.src_vocab == C.tgt_vocab,
                "stag::transformer: a shared vocabulary needs src_vocab == tgt_vocab");
  auto src = input<"src", Shape<batch, src_seq>, DType::i32>(g);
  auto src_keep = keep_input<"src_keep", Shape<batch, src_seq>>(g);  // true at real tokens
  auto tgt_in = input<"tgt_in", Shape<batch, tgt_seq>, DType::i32>(g);
  auto tgt_keep = keep_input<"tgt_keep", Shape<batch, tgt_seq>>(g);
  auto tgt_out = input<"tgt_out", Shape<batch, tgt_seq>, DType::i32>(g);
  const LayerOptions lo{.norm = C.pre_norm ? NormPlacement::pre : NormPlacement::post,
                        .dropout = C.dropout};

  auto src_table = param<Shape<C.src_vocab, C.d_model>>(g / "src_embed", "weight", kEmbeddingInit);
  auto tgt_table = [&] {
    if constexpr (C.shared_vocab)
      return src_table;
    else
      return param<Shape<C.tgt_vocab, C.d_model>>(g / "tgt_embed", "weight", kEmbeddingInit);
  }();
  constexpr double scale = cx::sqrt(static_cast<double>(C.d_model));
  auto x = maybe_dropout(
      embedding(src, src_table) * scale + sinusoidal_positions<C.d_model, src_seq>(g), C.dropout);
  auto y = maybe_dropout(
      embedding(tgt_in, tgt_table) * scale + sinusoidal_positions<C.d_model, tgt_seq>(g),
      C.dropout);

  const auto enc_keep = padding_keep(src_keep);  // [B, 1, S]
  for (int l = 0; l < C.enc_layers; ++l)
    x = encoder_layer<C.heads, C.d_ff>(g / "encoder" / l, x, enc_keep, lo);
  if (C.pre_norm) x = layer_norm_layer(g / "encoder" / "norm", x);

  const auto dec_keep = padding_keep(tgt_keep) & causal_keep<tgt_seq>(g);  // [B, T, T]
  for (int l = 0; l < C.dec_layers; ++l)
    y = decoder_layer<C.heads, C.d_ff>(g / "decoder" / l, y, x, dec_keep, enc_keep, lo);
  if (C.pre_norm) y = layer_norm_layer(g / "decoder" / "norm", y);

  auto logits =
      [&] {
        if constexpr (C.shared_vocab)
          return matmul_nt(y, tgt_table);  // tied output projection
        else
          return linear<C.tgt_vocab>(g / "generator", y);
      }()
          .named("logits")
          .output("logits");
  return cross_entropy(logits, tgt_out, {.label_smoothing = C.label_smoothing});
}
// snippet-end: docs-transformer-2

}  // namespace stag

BOOST_HANA_ADAPT_STRUCT(stag::TransformerConfig, src_vocab, tgt_vocab, shared_vocab, d_model, heads,
                        d_ff, enc_layers, dec_layers, dropout, label_smoothing, pre_norm);

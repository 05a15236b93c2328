// The articles' text classifier: token embedding + learned positions, N encoder layers,
// masked mean pooling over the real tokens, a linear head, cross-entropy.
// Inputs: ids [batch, seq] i32, keep [batch, seq] bool (false at padding), label [batch] i32.
// Outputs: the loss (result) and "logits" [batch, classes].
#pragma once

#include <boost/hana/adapt_struct.hpp>

#include <stag/models/blocks.hpp>

namespace stag {

// snippet-begin: docs-classifier-1
struct ClassifierConfig {
  int vocab = 8000;
  int max_len = 128;
  int d_model = 128;
  int heads = 4;
  int d_ff = 512;
  int layers = 1;
  int classes = 2;
  double dropout = 0.1;
  bool pre_norm = false;
};
// snippet-end: docs-classifier-1

// snippet-begin: docs-classifier-2
template <const ClassifierConfig& C>
constexpr auto classifier(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  auto label = input<"label", Shape<batch>, DType::i32>(g);
  const LayerOptions lo{.norm = C.pre_norm ? NormPlacement::pre : NormPlacement::post,
                        .dropout = C.dropout};
  auto x = maybe_dropout(token_embedding<C.vocab, C.d_model>(g / "tok", ids) +
                             learned_positions<C.max_len, C.d_model, seq>(g / "pos"),
                         C.dropout);
  const auto mask = padding_keep(keep);
  for (int l = 0; l < C.layers; ++l) x = encoder_layer<C.heads, C.d_ff>(g / "enc" / l, x, mask, lo);
  if (C.pre_norm) x = layer_norm_layer(g / "final_norm", x);
  auto logits =
      linear<C.classes>(g / "head", masked_mean(x, keep)).named("logits").output("logits");
  return cross_entropy(logits, label);
}
// snippet-end: docs-classifier-2

}  // namespace stag

BOOST_HANA_ADAPT_STRUCT(stag::ClassifierConfig, vocab, max_len, d_model, heads, d_ff, layers,
                        classes, dropout, pre_norm);

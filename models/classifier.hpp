// The articles' text classifier: token embedding + learned positions, N encoder layers,
// masked mean pooling over the real tokens, a linear head, cross-entropy.
// Inputs: ids [batch, seq] i32, keep [batch, seq] bool (false at padding), label [batch] i32.
// Outputs: the loss (result) and "logits" [batch, classes]. classifier_mlm pretrains its encoder.
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

// The encoder both graphs below share: embeddings, the layers and (Pre-LN) the final norm, on
// the token table `table` [vocab, d_model] ("tok.weight"). Same parameter names in both graphs,
// so weights pretrained with classifier_mlm load into classifier by name.
// snippet-begin: docs-classifier-3
template <const ClassifierConfig& C, class ST, class SI, class SK>
constexpr auto classifier_encoder(Builder& g, Tensor<ST> table, Tensor<SI, DType::i32> ids,
                                  KeepTokens<SK> keep) {
  using namespace dims;
  const LayerOptions lo{.norm = C.pre_norm ? NormPlacement::pre : NormPlacement::post,
                        .dropout = C.dropout};
  auto x = maybe_dropout(
      embedding(ids, table) + learned_positions<C.max_len, C.d_model, seq>(g / "pos"), C.dropout);
  const auto mask = padding_keep(keep);
  for (int l = 0; l < C.layers; ++l) x = encoder_layer<C.heads, C.d_ff>(g / "enc" / l, x, mask, lo);
  if (C.pre_norm) x = layer_norm_layer(g / "final_norm", x);
  return x;
}
// snippet-end: docs-classifier-3

// snippet-begin: docs-classifier-2
template <const ClassifierConfig& C>
constexpr auto classifier(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);  // true at real tokens
  auto label = input<"label", Shape<batch>, DType::i32>(g);
  auto table = param<Shape<C.vocab, C.d_model>>(g / "tok", "weight", kEmbeddingInit);
  auto x = classifier_encoder<C>(g, table, ids, keep);
  auto logits =
      linear<C.classes>(g / "head", masked_mean(x, keep)).named("logits").output("logits");
  return cross_entropy(logits, label);
}
// snippet-end: docs-classifier-2

// Masked-language-model pretraining of the classifier's encoder (BERT's objective) on
// unlabelled text: some input ids were replaced (by the data pipeline) and the graph predicts
// the original ids at those positions only. Inputs: ids and keep as classifier's, "where"
// [masked] i32 (each masked position as row * seq + column of the flattened batch) and
// "targets" [masked] i32 (the original ids there). The output projection is tied to the token
// table, so every parameter here is also one of classifier's (whose "head" is not trained
// here). Outputs: the loss and "logits" [masked, vocab].
// snippet-begin: docs-classifier-4
template <const ClassifierConfig& C>
constexpr auto classifier_mlm(Builder& g) {
  using namespace dims;
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);
  auto where = input<"where", Shape<masked>, DType::i32>(g);
  auto targets = input<"targets", Shape<masked>, DType::i32>(g);
  auto table = param<Shape<C.vocab, C.d_model>>(g / "tok", "weight", kEmbeddingInit);
  auto x = classifier_encoder<C>(g, table, ids, keep);                      // [batch, seq, D]
  auto rows = view<batch * seq, C.d_model>(x);                              // [batch * seq, D]
  auto picked = embedding(where, rows);                                     // [masked, D]: a gather
  auto logits = matmul_nt(picked, table).named("logits").output("logits");  // [masked, vocab]
  return cross_entropy(logits, targets);
}
// snippet-end: docs-classifier-4

}  // namespace stag

BOOST_HANA_ADAPT_STRUCT(stag::ClassifierConfig, vocab, max_len, d_model, heads, d_ff, layers,
                        classes, dropout, pre_norm);

// Gradient checks of the blocks (encoder layer in both forms, decoder layer, masked mean,
// cross-entropy with ignored positions) and of the three bundled models at tiny sizes, through
// th::check_op (f32 vs f64 reference, central differences, CPU session vs reference). Sizes are
// odd and symbolic dims are bound to two sets of values; every element is checked.
#include <stag/models/models.hpp>

#include "model_checks.hpp"

namespace {
using namespace stag;
using namespace stag::dims;
using th::f32;
using th::i32;
using th::labels;
using th::lengths_keep;

// ---- blocks -------------------------------------------------------------------------------

template <NormPlacement P, Activation A, int Drop>
constexpr auto encoder = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 6>>(g);
  auto w = input<"w", Shape<batch, seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  const LayerOptions o{.norm = P, .dropout = Drop / 100.0, .act = A};
  return sum<0, 1, 2>(encoder_layer<2, 10>(g / "enc", x, padding_keep(keep), o) * w);
});
template <NormPlacement P, Activation A, int Drop>
constexpr auto encoder_train = grad<encoder<P, A, Drop>, "x">();

NamedArrays encoder_inputs(int k) {
  const std::int64_t b = k == 0 ? 3 : 2, s = k == 0 ? 5 : 3;
  return {{"x", f32({b, s, 6}, 600 + k)},
          {"w", f32({b, s, 6}, 610 + k)},
          {"keep", k == 0 ? lengths_keep({5, 2, 0}, 5) : lengths_keep({1, 3}, 3)}};
}

TEST_CASE("encoder layers (Post-LN and Pre-LN) pass gradcheck", "[models][gradcheck]") {
  using enum NormPlacement;
  th::check_model("encoder_layer<2, 10>, Post-LN, relu", encoder<post, Activation::relu, 0>,
                  encoder_train<post, Activation::relu, 0>, encoder_inputs);
  th::check_model("encoder_layer<2, 10>, Pre-LN, gelu", encoder<pre, Activation::gelu, 0>,
                  encoder_train<pre, Activation::gelu, 0>, encoder_inputs);
}

TEST_CASE("an encoder layer with dropout passes gradcheck in training mode (fixed seed and step)",
          "[models][gradcheck]") {
  // Dropout masks come from a counter-based RNG keyed by (seed, step, node, element): the same
  // in every evaluation of the central differences, and the same on the CPU session.
  th::check_model("encoder_layer<2, 10>, Pre-LN, dropout 0.2, training",
                  encoder<NormPlacement::pre, Activation::gelu, 20>,
                  encoder_train<NormPlacement::pre, Activation::gelu, 20>, encoder_inputs,
                  {.training = true, .seed = 7, .step = 3});
}

constexpr auto decoder = model([](Builder& g) {
  auto y = input<"y", Shape<batch, tgt_seq, 6>>(g);
  auto memory = input<"memory", Shape<batch, src_seq, 6>>(g);
  auto w = input<"w", Shape<batch, tgt_seq, 6>>(g);
  auto tgt_keep = input<"tgt_keep", Shape<batch, tgt_seq>, DType::boolean>(g);
  auto src_keep = input<"src_keep", Shape<batch, src_seq>, DType::boolean>(g);
  auto self_keep = padding_keep(tgt_keep) & causal_keep<tgt_seq>(g);
  auto out = decoder_layer<2, 10>(g / "dec", y, memory, self_keep, padding_keep(src_keep),
                                  {.dropout = 0.0});
  return sum<0, 1, 2>(out * w);
});
constexpr auto decoder_train = grad<decoder, "y", "memory">();

TEST_CASE("the decoder layer passes gradcheck", "[models][gradcheck]") {
  th::check_model("decoder_layer<2, 10>, tgt_seq != src_seq", decoder, decoder_train, [](int k) {
    const std::int64_t b = 2, t = k == 0 ? 4 : 3, s = k == 0 ? 5 : 2;
    return NamedArrays{{"y", f32({b, t, 6}, 700 + k)},
                       {"memory", f32({b, s, 6}, 710 + k)},
                       {"w", f32({b, t, 6}, 720 + k)},
                       {"tgt_keep", lengths_keep({t, 2}, t)},
                       {"src_keep", lengths_keep({s, 1}, s)}};
  });
}

constexpr auto pooled = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 5>>(g);
  auto w = input<"w", Shape<batch, 5>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  return sum<0, 1>(masked_mean(x, keep) * w);
});
constexpr auto pooled_train = grad<pooled, "x">();

constexpr auto xent = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 5>>(g);
  auto y = input<"labels", Shape<batch, seq>, DType::i32>(g);
  return cross_entropy(linear<7>(g / "head", x), y);
});
constexpr auto xent_train = grad<xent, "x">();

TEST_CASE("masked mean pooling and cross-entropy with ignored positions pass gradcheck",
          "[models][gradcheck]") {
  th::check_model("masked_mean with an empty row", pooled, pooled_train, [](int k) {
    const std::int64_t b = k == 0 ? 3 : 2, s = k == 0 ? 5 : 3;
    return NamedArrays{{"x", f32({b, s, 5}, 800 + k)},
                       {"w", f32({b, 5}, 810 + k)},
                       {"keep", k == 0 ? lengths_keep({5, 2, 0}, 5) : lengths_keep({1, 3}, 3)}};
  });
  th::check_model("linear + cross_entropy, -100 at padding", xent, xent_train, [](int k) {
    const std::int64_t b = k == 0 ? 3 : 2, s = k == 0 ? 5 : 3;
    const Array keep = k == 0 ? lengths_keep({5, 2, 0}, 5) : lengths_keep({1, 3}, 3);
    return NamedArrays{{"x", f32({b, s, 5}, 820 + k)}, {"labels", labels(keep, 830 + k, 7)}};
  });
}

// ---- the bundled models at tiny sizes -------------------------------------------------------

constexpr ClassifierConfig kCls{.vocab = 11,
                                .max_len = 8,
                                .d_model = 6,
                                .heads = 2,
                                .d_ff = 10,
                                .layers = 2,
                                .classes = 3,
                                .dropout = 0.0};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_train = grad<cls>();

TEST_CASE("the classifier passes gradcheck", "[models][gradcheck]") {
  th::check_model("classifier, 2 Post-LN layers", cls, cls_train, [](int k) {
    const std::int64_t b = k == 0 ? 3 : 2, s = k == 0 ? 5 : 3;
    return NamedArrays{{"ids", i32({b, s}, 900 + k, 11)},
                       {"keep", k == 0 ? lengths_keep({5, 2, 0}, 5) : lengths_keep({1, 3}, 3)},
                       {"label", i32({b}, 910 + k, 3)}};
  });
}

constexpr ClassifierConfig kClsPre{.vocab = 11,
                                   .max_len = 6,
                                   .d_model = 8,
                                   .heads = 2,
                                   .d_ff = 12,
                                   .layers = 1,
                                   .classes = 3,
                                   .dropout = 0.0,
                                   .pre_norm = true};
constexpr auto mlm = model([](Builder& g) { return classifier_mlm<kClsPre>(g); });
constexpr auto mlm_train = grad<mlm>();

TEST_CASE("the classifier's masked-LM pretraining graph passes gradcheck", "[models][gradcheck]") {
  th::check_model("classifier_mlm, 1 Pre-LN layer, tied output", mlm, mlm_train, [](int k) {
    const std::int64_t b = 2, s = k == 0 ? 5 : 3;
    // Masked positions as row * s + column, inside each row's kept length (5/3 and 2).
    const Array where = k == 0 ? th::i32_values({0, 4, 6}) : th::i32_values({2, 3});
    return NamedArrays{{"ids", i32({b, s}, 1200 + k, 11)},
                       {"keep", k == 0 ? lengths_keep({5, 2}, 5) : lengths_keep({3, 2}, 3)},
                       {"where", where},
                       {"targets", i32({where.dim(0)}, 1210 + k, 11)}};
  });
}

constexpr TransformerConfig kTf{.src_vocab = 13,
                                .tgt_vocab = 11,
                                .d_model = 6,
                                .heads = 2,
                                .d_ff = 10,
                                .enc_layers = 1,
                                .dec_layers = 2,
                                .dropout = 0.0,
                                .pre_norm = true};
constexpr auto tf = model([](Builder& g) { return transformer<kTf>(g); });
constexpr auto tf_train = grad<tf>();

TEST_CASE("the encoder-decoder Transformer passes gradcheck", "[models][gradcheck]") {
  th::check_model("transformer, Pre-LN, 1 + 2 layers", tf, tf_train, [](int k) {
    const std::int64_t b = 2, s = k == 0 ? 5 : 3, t = k == 0 ? 4 : 3;
    const Array tgt_keep = lengths_keep({t, 2}, t);
    return NamedArrays{{"src", i32({b, s}, 1000 + k, 13)},
                       {"src_keep", lengths_keep({s, 2}, s)},
                       {"tgt_in", i32({b, t}, 1010 + k, 11)},
                       {"tgt_keep", tgt_keep},
                       {"tgt_out", labels(tgt_keep, 1020 + k, 11)}};
  });
}

constexpr LmConfig kLm{.vocab = 17,
                       .d_model = 8,
                       .heads = 4,
                       .kv_heads = 2,
                       .d_ff = 12,
                       .layers = 2,
                       .rope_theta = 100.0};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto lm_train = grad<lm>();

TEST_CASE("the language model passes gradcheck", "[models][gradcheck]") {
  th::check_model("language model, 2 blocks, GQA 4/2, tied embeddings", lm, lm_train, [](int k) {
    const std::int64_t b = k == 0 ? 2 : 1, s = k == 0 ? 7 : 4;
    Array targets = i32({b, s}, 1110 + k, 17);
    targets.set(s - 1, -100);  // the first row's last position has no next token
    return NamedArrays{{"ids", i32({b, s}, 1100 + k, 17)}, {"targets", targets}};
  });
}

}  // namespace

// The example graphs: a multi-head self-attention block and Transformer-style encoders written
// out here from plain ops (matmul, masked softmax, view, transpose, gelu, mean, + - ×), and the
// bundled models (models/) in their benchmark configurations.
#include "examples.hpp"

namespace stag::examples {

namespace {

constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int kModel = 64, kHeads = 4, kHidden = 128;
constexpr double kScale = 0.25;  // 1 / sqrt(kModel / kHeads)

// y = x @ weight + bias, with the parameters and both ops in scope `s`.
template <int Out, class S>
constexpr auto linear(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  auto w = param<Shape<in, Out>>(s, "weight");
  auto b = param<Shape<Out>>(s, "bias", kZeros);
  auto guard = s.enter();
  return matmul(x, w) + b;
}

// Multi-head self-attention with a [batch, seq] keep mask (a KeepTokens: true at real tokens),
// as the articles write it by hand: project, split heads, scale, mask, softmax, mix values,
// merge heads. padding_keep makes the mask [batch, 1, seq], which softmax broadcasts over heads.
template <class X, class K>
constexpr auto self_attention(Scope s, X x, K keep) {
  auto guard = s.enter();
  auto heads = [&](Scope p) {
    return transpose<1, 2>(view<batch, seq, kHeads, kModel / kHeads>(linear<kModel>(p, x)));
  };
  auto q = heads(s / "q");
  auto k = heads(s / "k");
  auto v = heads(s / "v");
  auto scores = (matmul_nt(q, k) * kScale).named("scores");
  auto weights = softmax<-1>(scores, padding_keep(keep)).named("weights");
  auto ctx = view<batch, seq, kModel>(transpose<1, 2>(matmul(weights, v)));
  return linear<kModel>(s / "out", ctx);
}

template <class X>
constexpr auto feed_forward(Scope s, X x) {
  auto guard = s.enter();
  return linear<kModel>(s / "down", gelu(linear<kHidden>(s / "up", x)));
}

// One post-residual encoder layer (no layer norm yet: that op is still being written).
template <class X, class K>
constexpr auto encoder_layer(Scope s, X x, K keep) {
  auto guard = s.enter();
  auto h = x + self_attention(s / "attn", x, keep);
  return h + feed_forward(s / "ff", h);
}

// A squared-error loss against a target input, written with elementwise ops and mean.
template <class Y>
constexpr auto squared_error(Builder& g, Y y) {
  auto target = input<"target", Shape<batch, seq, kModel>>(g);
  auto d = y - target;
  return mean<0, 1, 2>(d * d);
}

constexpr auto attention_block = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, kModel>>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);
  return squared_error(g, self_attention(g / "attn", x, keep));
});

template <int Layers>
consteval auto make_encoder() {
  return model([](Builder& g) {
    auto x = input<"x", Shape<batch, seq, kModel>>(g);
    auto keep = keep_input<"keep", Shape<batch, seq>>(g);
    Tensor<Shape<batch, seq, kModel>> h = x;
    for (int l = 0; l < Layers; ++l) h = encoder_layer(g / "enc" / l, h, keep);
    return squared_error(g, h);
  });
}
constexpr auto encoder2 = make_encoder<2>();
constexpr auto encoder6 = make_encoder<6>();
constexpr auto encoder12 = make_encoder<12>();

// The bundled models with the benchmarks' configurations (bench/profile_models.cpp).
constexpr ClassifierConfig kClassify{};  // vocab 8000, d 128, 4 heads, d_ff 512, 1 layer
constexpr auto classify = model([](Builder& g) { return classifier<kClassify>(g); });
constexpr TransformerConfig kTransformer{};  // 6 + 6 layers, d 512, 8 heads, d_ff 2048
constexpr auto transformer6 = model([](Builder& g) { return transformer<kTransformer>(g); });
constexpr LmConfig kGpt{};  // 4 layers, d 256, 8 query / 2 key-value heads, SwiGLU, RoPE
constexpr auto gpt = model([](Builder& g) { return language_model<kGpt>(g); });

}  // namespace

std::span<const ExampleModel> example_models() {
  static const ExampleModel models[] = {
      example<attention_block>("attention",
                               "one multi-head self-attention block with a padding mask"),
      example<encoder2>("encoder",
                        "2-layer Transformer-style encoder (attention + gelu feed-forward)"),
      example<encoder6>("encoder6", "the same encoder with 6 layers"),
      example<encoder12>("encoder12", "the same encoder with 12 layers"),
      example<classify>("classify",
                        "the articles' text classifier (ClassifierConfig{}: 1 layer, d 128)"),
      example<transformer6>("tf",
                            "encoder-decoder Transformer (TransformerConfig{}: 6+6 layers, d 512)"),
      example<gpt>("gpt", "decoder-only LM (LmConfig{}: 4 layers, d 256, GQA, RoPE, SwiGLU)"),
  };
  return models;
}

const ExampleModel* find_example(std::string_view name) {
  for (const ExampleModel& m : example_models())
    if (m.name == name) return &m;
  return nullptr;
}

}  // namespace stag::examples

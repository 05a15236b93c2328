// The example behind docs/tutorial-attention-variant.md: a new attention variant (ALiBi with a
// sliding window) written from stag's ops, used in a small language model, then checked the way
// the tutorial recommends: shapes at compile time, gradients against central differences, the
// CPU runtime against the reference evaluator, and the mask's promise on the attention weights.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>

#include <stag/models/attention_variants.hpp>
#include <stag/runtime/gradcheck.hpp>

#include "doc_tools.hpp"

using namespace stag;
using namespace stag::dims;  // the symbols batch, seq

// snippet-begin: variant
// ALiBi (Press et al., 2022) with a sliding window. No position embeddings: head h (1..H) adds
// -m_h * (i - j) to the score of query i and key j, with slope m_h = 2^(-8h / H), and query i
// sees only keys i - Window < j <= i.
template <auto H, int Window, class S, DType T>
constexpr auto alibi_window_attention(Scope s, Tensor<S, T> x) {
  auto guard = s.enter();
  Builder& g = *s.b;
  constexpr auto len = dim_at<S, 1>;
  constexpr auto d = dim_at<S, 2>;
  constexpr auto dh = dim_value<dim_quotient<d, H>>();  // the head dim, a value
  static_assert(dh.is_static(),
                "alibi_window_attention: the head dim d_model / H must be a number");

  auto q = split_heads<H>(linear<d>(s / "w_q", x));  // [B, H, S, Dh]
  auto k = split_heads<H>(linear<d>(s / "w_k", x));
  auto v = split_heads<H>(linear<d>(s / "w_v", x));

  // Distances i - j as [S, S] (a column of positions minus a row), and the window as a mask.
  auto pos = positions<len>(g);                            // [S] i32
  auto dist = unsqueeze<1>(pos) - unsqueeze<0>(pos);       // [S, S] i32
  auto keep = le(full<Shape<>, DType::i32>(g, 0), dist) &  // causal: j <= i
              lt(dist, full<Shape<>, DType::i32>(g, Window));
  // Slopes 2^(-8h/H) = exp(-8 ln2 h / H) as [H, 1, 1]; the bias broadcasts to [H, S, S].
  auto heads = cast<T>(positions<H>(g, 1));
  auto slope = view<H, 1, 1>(exp(heads * (-8.0 * std::numbers::ln2 / static_cast<double>(H))));
  auto bias = slope * cast<T>(dist);

  auto scores = matmul_nt(q, k) * (1.0 / cx::sqrt(static_cast<double>(dh.coef))) - bias;
  auto w = softmax<-1>(scores, view<1, 1, len, len>(keep)).named("weights");  // [B, H, S, S]
  auto out = linear<d>(s / "w_o", merge_heads(matmul(w, v)));                 // [B, S, D]
  return Attention<decltype(out), decltype(w)>{out, w};
}
// snippet-end: variant

// snippet-begin: model
// A two-layer Pre-LN language model on the variant: RMSNorm, ALiBi attention over a window of
// 3 tokens, SwiGLU. The vocabulary has 50 tokens; d_model 32 with 4 heads. The weights of each
// layer are the node `layers.<l>.attn.weights`.
constexpr auto alibi_lm = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto next = input<"next", Shape<batch, seq>, DType::i32>(g);  // the targets: ids shifted by one
  auto x = token_embedding<50, 32>(g / "embed", ids);
  for (int l = 0; l < 2; ++l) {
    auto s = g / "layers" / l;
    auto guard = s.enter();  // the layer's own nodes (norms, residual adds) are named under it
    x = x + alibi_window_attention<4, 3>(s / "attn", rms_norm_layer(s / "norm1", x)).out;
    x = x + swiglu<64>(s / "mlp", rms_norm_layer(s / "norm2", x));
  }
  auto logits = linear<50>(g / "head", rms_norm_layer(g / "norm", x), false);
  return cross_entropy(logits, next);
});
// snippet-end: model

// snippet-begin: static
static_assert(alibi_lm.count(op::softmax) == 2);
static_assert(alibi_lm.count(op::attention) == 2);  // the fusion pass rewrote both chains
static_assert(alibi_lm.count(op::positions) == 4);  // two per layer: the distances and the heads
static_assert(alibi_lm.shape(alibi_lm.find("layers.0.attn.weights")) ==
              Shape<batch, 4, seq, seq>::value);
constexpr auto alibi_step = train_step<alibi_lm, AdamW{.weight_decay = 0.01}>();
// snippet-end: static

// snippet-begin: fused
// The same variant on the fused attention op: ALiBi as a score_mod (compiled into the kernel's
// inner loop) over the built-in sliding window (its other tiles are skipped). No [S, S] tensor
// exists; the parameters have the same names as the chain's, so the same weights load.
template <auto H, int Window, class S, DType T>
constexpr auto alibi_window_fused(Scope s, Tensor<S, T> x) {
  return flex_self_attention<H>(s, x, score_mod<"alibi">(variants::alibi, alibi_slopes<H, T>(*s.b)),
                                no_mask_mod, {.mask = AttnMask::sliding_window, .window = Window});
}
constexpr auto alibi_lm_fused = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, DType::i32>(g);
  auto next = input<"next", Shape<batch, seq>, DType::i32>(g);
  auto x = token_embedding<50, 32>(g / "embed", ids);
  for (int l = 0; l < 2; ++l) {
    auto s = g / "layers" / l;
    auto guard = s.enter();
    x = x + alibi_window_fused<4, 3>(s / "attn", rms_norm_layer(s / "norm1", x));
    x = x + swiglu<64>(s / "mlp", rms_norm_layer(s / "norm2", x));
  }
  auto logits = linear<50>(g / "head", rms_norm_layer(g / "norm", x), false);
  return cross_entropy(logits, next);
});
static_assert(alibi_lm_fused.count(op::attention) == 2 && alibi_lm_fused.count(op::softmax) == 0);
// snippet-end: fused

int main() {
  const std::int64_t B = 2, S = 6, H = 4, W = 3;
  const NamedArrays in{{"ids", docs::random_ids({B, S}, 50, 1)},
                       {"next", docs::random_ids({B, S}, 50, 2)}};
  const NamedArrays params = make_params(alibi_lm, {}, 3);

  // snippet-begin: gradcheck
  // Every parameter's gradient against central differences of the loss, in f64. (A graph made
  // inside a function is `static constexpr`: compiled once into read-only data. A plain
  // `constexpr` local is rebuilt field by field on each call and costs g++ seconds per graph.)
  static constexpr auto grads = grad<alibi_lm>();
  const GradcheckReport r = gradcheck(grads, in, params, {.max_elements = 24});
  std::printf("%s\n", r.text().c_str());
  // snippet-end: gradcheck
  docs::expect(r.ok && r.checked > 0, "the variant's gradients match central differences");

  // snippet-begin: runtime
  // The oneDNN runtime against the reference evaluator (the oracle), on the same weights.
  Session sess(alibi_lm, {.keep = {"layers.0.attn.weights"}});  // readable after the run
  sess.set_params(params);
  sess.set_inputs(in);
  sess.run();
  const Evaluation ref = evaluate_reference(alibi_lm, in, params);
  std::printf("loss: runtime %.6f, reference %.6f\n", sess.result(), ref.result().at(0));
  // snippet-end: runtime
  docs::expect(std::abs(sess.result() - ref.result().at(0)) < 1e-4, "runtime and reference agree");

  // The fused model on the same weights: the same loss, and its gradients pass the same check.
  Session fused(alibi_lm_fused);
  fused.set_params(params);
  fused.set_inputs(in);
  fused.run();
  std::printf("loss: fused %.6f, chain %.6f\n", fused.result(), sess.result());
  docs::expect(std::abs(fused.result() - sess.result()) < 1e-4,
               "the score_mod variant computes the chain's loss");
  static constexpr auto fused_grads = grad<alibi_lm_fused>();
  const GradcheckReport rf = gradcheck(fused_grads, in, params, {.max_elements = 24});
  docs::expect(rf.ok && rf.checked > 0, "the fused variant's gradients match central differences");

  // The window's promise, on the runtime's weights: key j gets weight 0 unless i - 3 < j <= i,
  // each row sums to 1, and inside the window a nearer key is favoured for equal scores (checked
  // by the bias itself: head 1's slope is 2^-2).
  const Array w = sess.get("layers.0.attn.weights");
  bool zero_outside = true, rows_sum_to_one = true;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t i = 0; i < S; ++i) {
        double row = 0;
        for (std::int64_t j = 0; j < S; ++j) {
          const double v = w.at(((b * H + h) * S + i) * S + j);
          row += v;
          if ((j > i || i - j >= W) && v != 0.0) zero_outside = false;
        }
        if (std::abs(row - 1) > 1e-5) rows_sum_to_one = false;
      }
  docs::expect(zero_outside, "keys outside the window get weight exactly 0");
  docs::expect(rows_sum_to_one, "every query row sums to 1");

  // A few AdamW steps on one batch lower the loss (the training graph derived at compile time).
  Session train(alibi_step, {.seed = 1});
  train.set_params(params);
  double first = 0, last = 0;
  for (int step = 1; step <= 30; ++step) {
    train.set_inputs({{"ids", in.at("ids")},
                      {"next", in.at("next")},
                      {"lr", Array::from<float>({}, {1e-2f})},
                      {"step", Array::from<float>({}, {static_cast<float>(step)})}});
    train.run({.training = true, .step = static_cast<std::uint64_t>(step)});
    (step == 1 ? first : last) = train.result();
  }
  std::printf("loss after 1 step %.4f, after 30 steps %.4f\n", first, last);
  docs::expect(last < 0.5 * first, "30 AdamW steps on one batch halve the loss");

  // snippet-begin: draw
  const std::string svg = (std::filesystem::temp_directory_path() / "alibi_lm.svg").string();
  draw_model_svg(alibi_lm, svg);  // collapsed: the two layers are drawn once
  // snippet-end: draw
  std::stringstream text;
  text << std::ifstream(svg).rdbuf();
  docs::expect(
      text.str().find("<svg") != std::string::npos && text.str().find("attn") != std::string::npos,
      "the model's picture is an SVG showing the attention cluster");
  std::printf("wrote %s\n", svg.c_str());
  return 0;
}

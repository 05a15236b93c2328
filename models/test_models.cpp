// The bundled models build, their training graphs derive, and they run.
#include "harness.hpp"

namespace {
using namespace stag;

constexpr ClassifierConfig kCls{.vocab = 50,
                                .max_len = 16,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 2,
                                .classes = 3,
                                .dropout = 0.0};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_train = grad<cls>();

constexpr TransformerConfig kTf{.src_vocab = 30,
                                .tgt_vocab = 40,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .enc_layers = 2,
                                .dec_layers = 2,
                                .dropout = 0.0};
constexpr auto tf = model([](Builder& g) { return transformer<kTf>(g); });
constexpr auto tf_train = grad<tf>();

constexpr LmConfig kLm{
    .vocab = 60, .d_model = 16, .heads = 4, .kv_heads = 2, .d_ff = 32, .layers = 2};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto lm_train = grad<lm>();

static_assert(cls.count(op::softmax) == 2);
static_assert(tf.count(op::softmax) == 2 + 2 * 2);
static_assert(lm.count(op::rope) == 4);
static_assert(cls_train.shape(cls_train.output("grad/enc.1.self_attn.w_q.weight")) ==
              Shape<16, 16>::value);
static_assert(tf_train.shape(tf_train.output("grad/decoder.1.cross_attn.w_k.weight")) ==
              Shape<16, 16>::value);
static_assert(lm_train.shape(lm_train.output("grad/embed_tokens.weight")) == Shape<60, 16>::value);

TEST_CASE("the classifier runs", "[models]") {
  NamedArrays in{{"ids", th::random_array(DType::i32, {3, 7}, 1, 0, 50)},
                 {"keep", th::random_array(DType::boolean, {3, 7}, 2)},
                 {"label", th::random_array(DType::i32, {3}, 3, 0, 3)}};
  const NamedArrays params = make_params(cls, {}, 1);
  const Evaluation e = evaluate_reference(cls_train, in, params);
  CHECK(std::isfinite(e.result().at(0)));
}

// Issue 15 §6: no node of the bundled models' training graphs runs oneDNN's generic reference
// implementation ("ref:any" in describe_kernels()), at sizes where the shapes broadcast as in
// training (batch > 1, padding masks).
TEST_CASE("the bundled models' training graphs run no ref:any kernel", "[models][kernels]") {
  const DimValues dims{{"batch", 3}, {"seq", 7}, {"src_seq", 5}, {"tgt_seq", 6}};
  const GraphView graphs[] = {cls_train, tf_train, lm_train};
  for (const GraphView& g : graphs) {
    Session s(g, {.threads = 2, .seed = 1});
    s.set_inputs(sample_inputs(g, dims));
    s.run({.training = true});
    const std::string k = s.describe_kernels();
    INFO(k);
    CHECK(k.find("ref:any") == std::string::npos);
    CHECK(std::isfinite(s.result()));
  }
}

}  // namespace

// A check on a run-time option (AttentionOptions::rope over an odd head dim) is one compile error
// when model() builds the graph (tests/compile_fail/*_rope_odd_head_dim.cpp); a graph built at
// run time gets a GraphError with the same text, and nothing is recorded for an even head dim.
TEST_CASE("rope over an odd head dim is refused by a graph built at run time", "[models]") {
  using namespace stag::dims;
  auto message = [](auto build) {
    Builder b;
    try {
      build(b);
    } catch (const GraphError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(message([](Builder& b) {
          auto x = input<"x", Shape<batch, seq, 36>>(b);
          (void)grouped_query_attention<4, 2>(b / "attn", x, causal_keep<seq>(b), {.rope = true});
        }) ==
        "stag::grouped_query_attention: rope needs an even head dim, but d_model / heads "
        "is odd (d_model, heads): [batch, seq, 36] and [4]");
  CHECK(message([](Builder& b) {
          auto x = input<"x", Shape<batch, seq, 36>>(b);
          (void)multi_head_attention<4>(b / "attn", x, x, causal_keep<seq>(b), {.rope = true});
        }) ==
        "stag::multi_head_attention: rope needs an even head dim, but d_model / heads "
        "is odd (d_model, heads): [batch, seq, 36] and [4]");
  Builder ok;
  auto x = input<"x", Shape<batch, seq, 36>>(ok);
  (void)grouped_query_attention<4, 2>(ok / "attn", x, causal_keep<seq>(ok));  // no rope: fine
  CHECK(ok.failure.check == BuildCheck::none);
}

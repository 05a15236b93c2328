// The example behind docs/models/classifier.md: the text classifier from a config, its training
// step with AdamW (forward, backward and update in one compile-time graph), and a few steps on
// one batch through the CPU session; run, it checks that the loss falls. `--shapes classifier`
// prints the page's table.
#include "doc_tools.hpp"

using namespace stag;

// snippet-begin: config
constexpr ClassifierConfig kConfig{.vocab = 1000,
                                   .max_len = 32,
                                   .d_model = 64,
                                   .heads = 4,
                                   .d_ff = 128,
                                   .layers = 2,
                                   .classes = 2,
                                   .dropout = 0.1};
constexpr auto net = model([](Builder& g) { return classifier<kConfig>(g); });  // loss, "logits"
constexpr auto step = train_step<net, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();
// snippet-end: config

// snippet-begin: checks
static_assert(net.count(op::softmax) == kConfig.layers);
static_assert(net.shape(net.output("logits")) == Shape<dims::batch, 2>::value);
static_assert(step.shape(step.output("grad/enc.1.ffn.w_1.weight")) == Shape<128, 64>::value);
// snippet-end: checks

int main(int argc, char** argv) {
  if (docs::shapes_arg(argc, argv) == "classifier") {
    docs::print_shape_table(net, [](int n) { return docs::interface_node(net, n); });
    return 0;
  }
  // snippet-begin: run
  Session s(step, {.seed = 1});
  s.set_inputs({{"ids", docs::random_ids({8, 12}, kConfig.vocab, 2)},
                {"keep", docs::lengths_keep({12, 12, 9, 7, 12, 3, 10, 12}, 12)},
                {"label", Array::from<std::int32_t>({8}, {0, 1, 1, 0, 1, 0, 0, 1})},
                {"lr", Array::from<float>({}, {3e-3f})}});
  double first = 0, last = 0;
  for (int i = 1; i <= 30; ++i) {
    s.set_input("step", Array::from<float>({}, {static_cast<float>(i)}));
    s.run({.training = true, .step = static_cast<std::uint64_t>(i)});  // dropout on
    (i == 1 ? first : last) = s.result();
  }
  // snippet-end: run
  std::printf("loss %.4f -> %.4f after 30 steps on one batch\n", first, last);
  docs::expect(std::isfinite(last) && last < 0.5 * first, "the training step fits one batch");
  return 0;
}

// The example behind docs/models/lm.md: the minimind-style decoder-only language model from a
// config. Run, it checks causality (changing token t changes no logits before t) and that the
// output projection is the embedding table (tied). `--shapes lm` prints the page's table.
#include "doc_tools.hpp"

using namespace stag;

// snippet-begin: config
constexpr LmConfig kConfig{.vocab = 256,
                           .d_model = 64,
                           .heads = 8,
                           .kv_heads = 2,
                           .d_ff = 176,
                           .layers = 2,
                           .dropout = 0.0,
                           .rope_theta = 1e6,
                           .tie_embeddings = true};
constexpr auto net =
    model([](Builder& g) { return language_model<kConfig>(g); });  // loss, "logits"
constexpr auto step = grad<net>();
// Tied: the embedding table is the only [vocab, d_model] parameter, and it gets one gradient.
static_assert(net.num_params() == 1 + kConfig.layers * 9 + 1);
static_assert(step.shape(step.output("grad/embed_tokens.weight")) == Shape<256, 64>::value);
// snippet-end: config

int main(int argc, char** argv) {
  if (docs::shapes_arg(argc, argv) == "lm") {
    docs::print_shape_table(net, [](int n) { return docs::interface_node(net, n); });
    return 0;
  }
  const std::int64_t B = 2, S = 9;
  Array targets = docs::random_ids({B, S}, kConfig.vocab, 2);
  targets.set(S - 1, -100);  // no next token: ignored
  const NamedArrays in{{"ids", docs::random_ids({B, S}, kConfig.vocab, 1)}, {"targets", targets}};
  NamedArrays changed = in;
  changed["ids"] = in.at("ids").clone();
  changed["ids"].set(5, std::fmod(in.at("ids").at(5) + 1, kConfig.vocab));  // batch 0, position 5
  const NamedArrays params = make_params(net, {}, 3);
  const Array a = evaluate_reference(net, in, params)["logits"];
  const Array b = evaluate_reference(net, changed, params)["logits"];
  double before = 0, after = 0;
  for (std::int64_t i = 0; i < S * kConfig.vocab; ++i)  // batch 0
    (i / kConfig.vocab < 5 ? before : after) += std::abs(a.at(i) - b.at(i));
  docs::expect(before == 0.0 && after > 0.0, "token 5 changes the logits at positions 5.. only");
  return 0;
}

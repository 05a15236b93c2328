// The example behind docs/models/transformer.md: the encoder-decoder Transformer from a config.
// Run, it checks the decoder's causal mask (changing target token t changes no logits before t)
// and the source padding mask (padded source tokens change nothing). `--shapes transformer`
// prints the page's table.
#include "doc_tools.hpp"

using namespace stag;

// snippet-begin: config
constexpr TransformerConfig kConfig{.src_vocab = 120,
                                    .tgt_vocab = 90,
                                    .d_model = 64,
                                    .heads = 4,
                                    .d_ff = 128,
                                    .enc_layers = 2,
                                    .dec_layers = 2,
                                    .dropout = 0.1,
                                    .pre_norm = true};
constexpr auto net = model([](Builder& g) { return transformer<kConfig>(g); });  // loss, "logits"
constexpr auto step = grad<net>();
static_assert(net.count(op::softmax) == kConfig.enc_layers + 2 * kConfig.dec_layers);
static_assert(step.shape(step.output("grad/decoder.1.cross_attn.w_k.weight")) ==
              Shape<64, 64>::value);
// snippet-end: config

// The largest change in the logits at target positions < t (or at every position, t = -1) when
// the inputs change from `a` to `b`.
double logits_change(const NamedArrays& a, const NamedArrays& b, std::int64_t before) {
  const NamedArrays params = make_params(net, {}, 5);
  const Array la = evaluate_reference(net, a, params)["logits"];
  const Array lb = evaluate_reference(net, b, params)["logits"];
  const std::int64_t T = la.dim(1), V = la.dim(2);
  double worst = 0;
  for (std::int64_t i = 0; i < la.numel(); ++i)
    if (before < 0 || (i / V) % T < before) worst = std::max(worst, std::abs(la.at(i) - lb.at(i)));
  return worst;
}

int main(int argc, char** argv) {
  if (docs::shapes_arg(argc, argv) == "transformer") {
    docs::print_shape_table(net, [](int n) { return docs::interface_node(net, n); });
    return 0;
  }
  const std::int64_t B = 2, S = 7, T = 6;
  const Array tgt_keep = docs::lengths_keep({6, 4}, T);
  Array tgt_out = docs::random_ids({B, T}, kConfig.tgt_vocab, 3);
  for (std::int64_t i = 0; i < tgt_out.numel(); ++i)
    if (tgt_keep.at(i) == 0) tgt_out.set(i, -100);  // ignored by the loss
  const NamedArrays in{{"src", docs::random_ids({B, S}, kConfig.src_vocab, 1)},
                       {"src_keep", docs::lengths_keep({7, 5}, S)},
                       {"tgt_in", docs::random_ids({B, T}, kConfig.tgt_vocab, 2)},
                       {"tgt_keep", tgt_keep},
                       {"tgt_out", tgt_out}};
  NamedArrays future = in;
  future["tgt_in"] = in.at("tgt_in").clone();
  future["tgt_in"].set(
      3, std::fmod(in.at("tgt_in").at(3) + 1, kConfig.tgt_vocab));  // batch 0, position 3
  docs::expect(logits_change(in, future, 3) == 0.0,
               "target token 3 changes no logits at positions 0-2");
  docs::expect(logits_change(in, future, -1) > 0.0, "... but it does change later positions");
  NamedArrays padded = in;
  padded["src"] = in.at("src").clone();
  padded["src"].set(S + 6,
                    std::fmod(in.at("src").at(S + 6) + 1, kConfig.src_vocab));  // batch 1, padding
  docs::expect(logits_change(in, padded, -1) == 0.0, "padded source tokens change nothing");
  return 0;
}

// The example behind docs/models/encoder.md: a stack of encoder layers (Post-LN and Pre-LN) as a
// plain loop. Run, it checks that padding cannot leak into real positions: changing the padded
// inputs leaves every real position's output unchanged. `--shapes post|pre` prints the tables.
#include "doc_tools.hpp"

using namespace stag;
using namespace stag::dims;

// snippet-begin: encoder
template <NormPlacement Norm>
constexpr auto encoder = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 64>>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);  // true at real tokens
  const LayerOptions o{.norm = Norm, .dropout = 0.1, .act = Activation::gelu};
  for (int l = 0; l < 3; ++l)  // a plain loop: compile time grows linearly with depth
    x = encoder_layer<4, 256>(g / "enc" / l, x, padding_keep(keep), o);
  if (Norm == NormPlacement::pre)
    x = layer_norm_layer(g / "final_norm", x);  // Pre-LN ends with a norm
  return x;
});
constexpr auto post_ln = encoder<NormPlacement::post>;
constexpr auto pre_ln = encoder<NormPlacement::pre>;
// snippet-end: encoder

static_assert(post_ln.count(op::layer_norm) == 6 && pre_ln.count(op::layer_norm) == 7);
// Two residuals and the FFN hidden per layer; the attention weights' dropout runs inside the fused
// attention op.
static_assert(post_ln.count(op::dropout) == 3 * 3 && post_ln.count(op::attention) == 3);

// The largest change at real positions when the padded positions of x change.
double padding_leak(const GraphView& g) {
  const std::int64_t B = 2, S = 6, D = 64;
  const Array keep = docs::lengths_keep({6, 4}, S);
  const Array x = docs::random_floats({B, S, D}, 1);
  Array x2 = x.clone();
  const Array noise = docs::random_floats({B, S, D}, 2);
  for (std::int64_t i = 0; i < x2.numel(); ++i)
    if (keep.at(i / D) == 0) x2.set(i, 10 * noise.at(i));
  const NamedArrays params = make_params(g, {}, 3);
  const Array y = evaluate_reference(g, {{"x", x}, {"keep", keep}}, params).result();
  const Array y2 = evaluate_reference(g, {{"x", x2}, {"keep", keep}}, params).result();
  double worst = 0;
  for (std::int64_t i = 0; i < y.numel(); ++i)
    if (keep.at(i / D) != 0) worst = std::max(worst, std::abs(y.at(i) - y2.at(i)));
  return worst;
}

int main(int argc, char** argv) {
  const std::string table = docs::shapes_arg(argc, argv);
  const auto keep = [](GraphView g) { return [g](int n) { return docs::interface_node(g, n); }; };
  if (table == "post") docs::print_shape_table(post_ln, keep(post_ln));
  if (table == "pre") docs::print_shape_table(pre_ln, keep(pre_ln));
  if (!table.empty()) return 0;
  // NOTE: the evaluation runs in eval mode (dropout is the identity), as at inference.
  docs::expect(padding_leak(post_ln) == 0.0, "Post-LN: padded inputs do not change real positions");
  docs::expect(padding_leak(pre_ln) == 0.0, "Pre-LN: padded inputs do not change real positions");
  return 0;
}

// The README's example: a two-layer encoder classifier and its AdamW training step, run once.
#include <cmath>
#include <cstdio>

// snippet-begin: example
#include <stag/stag.hpp>

STAG_SYMBOL(batch);  // stag::sym<"batch"> too; this spelling prints by name in errors
STAG_SYMBOL(seq);

constexpr auto net = stag::model([](stag::Builder& g) {
  auto x = stag::input<"x", stag::Shape<batch, seq, 64>>(g);
  auto keep = stag::keep_input<"keep", stag::Shape<batch, seq>>(g);  // true at real tokens
  auto label = stag::input<"label", stag::Shape<batch>, stag::i32>(g);
  for (int l = 0; l < 2; ++l)  // a plain loop
    x = stag::encoder_layer<4, 256>(g / "enc" / l, x, stag::padding_keep(keep));
  auto logits = stag::linear<2>(g / "head", stag::masked_mean(x, keep));
  return stag::cross_entropy(logits, label);
});
static_assert(net.count(stag::op::softmax) == 2);

constexpr auto step = stag::train_step<net, stag::AdamW{.weight_decay = 0.01}>();
// snippet-end: example

int main() {
  // snippet-begin: run
  stag::Session s(step, {.seed = 1});
  stag::Array x(stag::f32, {2, 5, 64}), keep(stag::boolean, {2, 5}), label(stag::i32, {2});
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, std::sin(0.1 * static_cast<double>(i)));
  for (std::int64_t i = 0; i < keep.numel(); ++i) keep.set(i, i % 5 < 4);  // last position padded
  label.set(1, 1);
  s.set_inputs({{"x", x},
                {"keep", keep},
                {"label", label},
                {"lr", stag::Array::from<float>({}, {1e-3f})},
                {"step", stag::Array::from<float>({}, {1.f})}});
  s.run({.training = true, .step = 1});
  const double loss = s.result();
  const stag::Array dw = s.get("grad/enc.0.self_attn.w_q.weight");
  // snippet-end: run
  std::printf("loss %.4f, |grad| of enc.0.self_attn.w_q.weight has %lld elements\n", loss,
              static_cast<long long>(dw.numel()));
  return std::isfinite(loss) && dw.numel() == 64 * 64 ? 0 : 1;
}

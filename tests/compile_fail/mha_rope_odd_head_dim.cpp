// Mistake: multi-head attention with rotary positions (AttentionOptions::rope, a run-time option) whose head dim is odd (d_model 36 over 4 heads is 9; rope rotates pairs). The option is a value, so the layer records the failed check while the model
// function runs and model() reports it: one error that names the layer and shows both dims.
// clang-format off
// expect-first-gcc: error: invalid application of .?sizeof.? to incomplete type .?stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: rope needs an even head dim, but d_model / heads is odd \(d_model, heads\): \[batch, seq, 36\] and \[4\]"\}>
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::n<36>>, stag::show::shape<stag::show::n<4>>>>' "stag::multi_head_attention: rope needs an even head dim, but d_model / heads is odd \(d_model, heads\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto x = input<"x", Shape<batch, seq, 36>>(b);
#else
  auto x = input<"x", Shape<batch, seq, 32>>(b);
#endif
  auto a = multi_head_attention<4>(b / "attn", x, x, causal_keep<seq>(b), {.rope = true});
  return sum<0, 1, 2>(a.out);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: a layer_norm bias [seq, 64] next to a weight [64]; the bias must have the weight's
// shape (PyTorch would broadcast it silently and give every position its own bias).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::layer_norm: the bias.?'s shape must equal the weight.?'s shape: \[64\] and \[seq, 64\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::n<64>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>>>. "stag::layer_norm: the bias's shape must equal the weight's shape"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
  auto w = param<Shape<64>>(b / "ln", "weight", kOnes);
#ifdef STAG_BAD
  auto bias = param<Shape<seq, 64>>(b / "ln", "bias", kZeros);
#else
  auto bias = param<Shape<64>>(b / "ln", "bias", kZeros);
#endif
  return sum<0, 1, 2>(layer_norm(x, w, bias));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: a layer_norm bias [seq, 64] next to a weight [64]; the bias must have the weight's
// shape (PyTorch would broadcast it silently and give every position its own bias).
// clang-format off
// expect: stag::layer_norm: the bias's shape must equal the weight's shape
// expect-gcc: SW = (stag::)?Shape<64>;
// expect-gcc: SB = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\), 64>;
// expect-gcc: required from here
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

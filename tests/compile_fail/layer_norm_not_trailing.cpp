// Mistake: a layer_norm weight [seq] for x [batch, seq, 64]; the weight must be the trailing
// dims of x ([64], or [seq, 64] to normalise over both), not a leading one.
// clang-format off
// expect: stag::layer_norm: the weight's shape must equal the trailing dims of x
// expect-gcc: SX = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), (stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: SW = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\)>;
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<seq>>(b / "ln", "weight", kOnes);
  auto bias = param<Shape<seq>>(b / "ln", "bias", kZeros);
#else
  auto w = param<Shape<64>>(b / "ln", "weight", kOnes);
  auto bias = param<Shape<64>>(b / "ln", "bias", kZeros);
#endif
  return sum<0, 1, 2>(layer_norm(x, w, bias));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

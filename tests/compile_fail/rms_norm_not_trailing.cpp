// Mistake: an rms_norm weight [32] for x [batch, seq, 64] (a weight sized for another layer);
// the weight must be the trailing dims of x.
// clang-format off
// expect: stag::rms_norm: the weight's shape must equal the trailing dims of x
// expect-gcc: SX = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), (stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: SW = (stag::)?Shape<32>;
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<32>>(b / "norm", "weight", kOnes);
#else
  auto w = param<Shape<64>>(b / "norm", "weight", kOnes);
#endif
  return sum<0, 1, 2>(rms_norm(x, w));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

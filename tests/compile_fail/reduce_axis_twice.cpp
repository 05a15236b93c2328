// Mistake: mean<1, -2> of a rank-3 tensor names axis 1 twice (the user meant <1, -1>).
// expect: stag::mean: an axis is named twice
// expect-gcc: int \.\.\.Axes = \{1, -2\}; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = mean<1, -2>(x);
#else
  auto y = mean<1, -1>(x);
#endif
  return sum<0>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

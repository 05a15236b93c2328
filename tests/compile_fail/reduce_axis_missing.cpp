// Mistake: sum<3> of a rank-3 [batch, seq, 64] tensor.
// expect: stag::sum: reduction axis out of range for the input..?s rank
// expect-gcc: int \.\.\.Axes = \{3\}; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = sum<3>(x);
#else
  auto y = sum<2>(x);
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

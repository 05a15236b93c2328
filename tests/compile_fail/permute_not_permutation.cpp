// Mistake: permute<0, 2, 2, 1> names axis 2 twice and never axis 3.
// expect: stag::permute: the axes must name every input dim exactly once
// expect-gcc: int \.\.\.P = \{0, 2, 2, 1\}; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 8, 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 8, 64>>(b);
#ifdef STAG_BAD
  auto y = permute<0, 2, 2, 1>(x);
#else
  auto y = permute<0, 2, 1, 3>(x);
#endif
  return sum<0, 1, 2, 3>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

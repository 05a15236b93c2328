// Mistake: splitting d_model = 500 into 8 heads of 64 (8 * 64 = 512 != 500).
// expect: stag::view: the element counts differ \(input shape vs target shape\)
// expect-gcc: Ds = \{Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 8, 64\}
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 500>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int heads = 8;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  constexpr int d_model = 500;
#else
  constexpr int d_model = 512;
#endif
  auto x = input<"x", Shape<batch, seq, d_model>>(b);
  auto q = transpose<1, 2>(view<batch, seq, heads, 64>(x));
  return sum<0, 1, 2, 3>(q);
});

int main() { return g.size() > 0 ? 0 : 1; }

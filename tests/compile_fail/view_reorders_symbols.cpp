// Mistake: view used where a transpose was meant: [batch, seq, 64] -> [seq, batch, 64]
// keeps the element count but scrambles the data.
// expect: stag::view: the target reorders symbolic dims; view cannot move data, use permute
// expect-gcc: Ds = \{Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<6>\{"batch"\}>\(\), 64\}
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = view<seq, batch, 64>(x);
#else
  auto y = transpose<0, 1>(x);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

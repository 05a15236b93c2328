// Mistake: concatenating a [seq, 64] block with a [kv_seq, 64] one along the symbolic axis:
// seq + kv_seq is not a single dim (stag cannot type the result).
// clang-format off
// expect: stag::concat: the sizes along the axis do not add up to one dim
// expect-gcc: Ss = \{[:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 64>, [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<7>\{"kv_seq"\}>\(\), 64>\}
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;
constexpr auto kv = sym<"kv_seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 64>>(b);
#ifdef STAG_BAD
  auto y = input<"y", Shape<kv, 64>>(b);
#else
  auto y = input<"y", Shape<seq, 64>>(b);
#endif
  return sum<0, 1>(concat<0>(x, y));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

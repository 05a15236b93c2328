// Mistake: concatenating a [seq, 64] block with a [kv_seq, 64] one along the symbolic axis:
// seq + kv_seq is not a single dim (stag cannot type the result).
// clang-format off
// expect: stag::concat: the sizes along the axis do not add up to one dim
// expect-gcc: Ss = \{[:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 64>, [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<7>\{"kv_seq"\}>\(\), 64>\}
// expect-gcc: required from here
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::concat: the sizes along the axis do not add up to one dim: they must all be numbers, or multiples of the same symbols \(seq \+ seq = 2\*seq. seq \+ 5 is not a dim\): \[seq, 64\] and \[kv_seq, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.s., .e., .q.>, stag::show::n<64>>, stag::show::shape<stag::show::name<.k., .v., ._., .s., .e., .q.>, stag::show::n<64>>>>. .stag::concat: the sizes along the axis do not add up to one dim: they must all be numbers, or multiples of the same symbols \(seq \+ seq = 2\*seq. seq \+ 5 is not a dim\).
// expect-errors: 1
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

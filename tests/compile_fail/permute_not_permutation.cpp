// Mistake: permute<0, 2, 2, 1> names axis 2 twice and never axis 3.
// expect: stag::permute: the axes must name every input dim exactly once
// expect-gcc: int \.\.\.P = \{0, 2, 2, 1\}; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 8, 64>
// expect-gcc: required from here
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::permute: the axes must name every input dim exactly once: \[batch, seq, 8, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::n<8>, stag::show::n<64>>, void>>. .stag::permute: the axes must name every input dim exactly once.
// expect-errors: 1
// clang-format on
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

// Mistake: transpose<1, 3> on a rank-3 [batch, seq, 64] tensor (the head split was skipped).
// expect: stag::transpose: axis out of range for the input..?s rank
// expect-gcc: int I = 1; int J = 3; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::transpose: axis out of range for the input..s rank: \[batch, seq, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::n<64>>, void>>. .stag::transpose: axis out of range for the input.s rank.
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = transpose<1, 3>(x);
#else
  auto y = transpose<1, 3>(view<batch, seq, 4, 16>(x));
#endif
  return sum<0, 1, 2>(sum<-1>(y));
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: mean<1, -2> of a rank-3 tensor names axis 1 twice (the user meant <1, -1>).
// expect: stag::mean: an axis is named twice
// expect-gcc: int \.\.\.Axes = \{1, -2\}; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::mean: an axis is named twice \(e\.g\. 1 and -2 of a rank-3 input\): \[batch, seq, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::n<64>>, void>>. .stag::mean: an axis is named twice \(e\.g\. 1 and -2 of a rank-3 input\).
// expect-errors: 1
// clang-format on
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

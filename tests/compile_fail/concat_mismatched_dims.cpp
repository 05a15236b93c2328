// Mistake: concatenating heads [batch, 4, seq, 16] and [batch, 8, seq, 16] along the last axis
// (the head counts differ; only the concat axis may differ).
// clang-format off
// expect: stag::concat: the inputs..? dims differ outside the concat axis
// expect-gcc: Ss = \{[:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 4, [:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 16>, [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 8, [:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 16>\}
// expect-gcc: required from here
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::concat: the inputs.. dims differ outside the concat axis \(they must be equal\): \[batch, 4, seq, 16\] and \[batch, 8, seq, 16\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::n<4>, stag::show::name<.s., .e., .q.>, stag::show::n<16>>, stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::n<8>, stag::show::name<.s., .e., .q.>, stag::show::n<16>>>>. .stag::concat: the inputs. dims differ outside the concat axis \(they must be equal\).
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 4, seq, 16>>(b);
#ifdef STAG_BAD
  auto y = input<"y", Shape<batch, 8, seq, 16>>(b);
#else
  auto y = input<"y", Shape<batch, 4, seq, 16>>(b);
#endif
  return sum<0, 1, 2, 3>(concat<-1>(x, y));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

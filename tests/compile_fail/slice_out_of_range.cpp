// Mistake: taking columns 8 to 16 (exclusive) of a [seq, 12] tensor: the static dim has only 12.
// clang-format off
// expect: stag::slice: End is beyond the size of the \(static\) dim being sliced
// expect-gcc: Start = 8; long int End = 16; S = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 12>
// expect-gcc: required from here
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::slice: End is beyond the size of the \(static\) dim being sliced: \[seq, 12\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.s., .e., .q.>, stag::show::n<12>>, void>>. .stag::slice: End is beyond the size of the \(static\) dim being sliced.
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 12>>(b);
#ifdef STAG_BAD
  return sum<0, 1>(slice<1, 8, 16>(x));
#else
  return sum<0, 1>(slice<1, 8, 12>(x));
#endif
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

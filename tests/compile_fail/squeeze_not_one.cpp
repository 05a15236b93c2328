// Mistake: squeeze<1> of [batch, seq, 64], whose dim 1 is seq, not 1 (PyTorch's squeeze(1)
// silently does nothing here).
// expect: stag::squeeze: the squeezed dim is not 1
// expect-gcc: int Axis = 1; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::squeeze: the squeezed dim is not 1. check the axis \(a longer dim must be reduced, e\.g\. with sum or max\): \[batch, seq, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::n<64>>, void>>. .stag::squeeze: the squeezed dim is not 1. check the axis \(a longer dim must be reduced, e\.g\. with sum or max\).
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = squeeze<1>(x);
#else
  auto y = squeeze<1>(mean<1>(x, keepdim));
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: softmax<3> over [batch, seq, seq] scores (rank 3: the last axis is 2, or -1).
// expect: stag::softmax: axis out of range for the input..?s rank
// expect-gcc: int Axis = 3; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::softmax: axis out of range for the input..s rank: \[batch, seq, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::name<.s., .e., .q.>>, void>>. .stag::softmax: axis out of range for the input.s rank.
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, seq, 32>>(b);
  auto scores = matmul_nt(q, q);
#ifdef STAG_BAD
  auto p = softmax<3>(scores);
#else
  auto p = softmax<-1>(scores);
#endif
  return sum<0, 1, 2>(p);
});

int main() { return g.size() > 0 ? 0 : 1; }

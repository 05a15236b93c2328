// Mistake: multiplying [batch, seq, 64] by [32, 64] (the weight needs a transpose).
// expect: stag::matmul: inner dimensions differ
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::matmul: inner dimensions differ: A is \[\.\.\., M, K\] and B must be \[\.\.\., K, N\]: \[batch, seq, 64\] and \[32, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>, stag::show::shape<stag::show::n<32>, stag::show::n<64>>>>' "stag::matmul: inner dimensions differ: A is \[\.\.\., M, K\] and B must be \[\.\.\., K, N\]"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<32, 64>>(b / "proj", "weight");
#else
  auto w = param<Shape<64, 32>>(b / "proj", "weight");
#endif
  return sum<0, 1, 2>(matmul(x, w));
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: an rms_norm weight [32] for x [batch, seq, 64] (a weight sized for another layer);
// the weight must be the trailing dims of x.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::rms_norm: the weight.?'s shape must equal the trailing dims of x \(x \[B, S, D\] takes a weight \[D\] or \[S, D\]\); fix the weight.?'s shape or permute x: \[batch, seq, 64\] and \[32\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>, stag::show::shape<stag::show::n<32>>>>. "stag::rms_norm: the weight's shape must equal the trailing dims of x \(x \[B, S, D\] takes a weight \[D\] or \[S, D\]\); fix the weight's shape or permute x"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<32>>(b / "norm", "weight", kOnes);
#else
  auto w = param<Shape<64>>(b / "norm", "weight", kOnes);
#endif
  return sum<0, 1, 2>(rms_norm(x, w));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

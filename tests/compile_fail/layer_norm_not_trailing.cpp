// Mistake: a layer_norm weight [seq] for x [batch, seq, 64]; the weight must be the trailing
// dims of x ([64], or [seq, 64] to normalise over both), not a leading one.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::layer_norm: the weight.?'s shape must equal the trailing dims of x \(x \[B, S, D\] takes a weight \[D\] or \[S, D\]\); fix the weight.?'s shape or permute x: \[batch, seq, 64\] and \[seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>>>>. "stag::layer_norm: the weight's shape must equal the trailing dims of x \(x \[B, S, D\] takes a weight \[D\] or \[S, D\]\); fix the weight's shape or permute x"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<seq>>(b / "ln", "weight", kOnes);
  auto bias = param<Shape<seq>>(b / "ln", "bias", kZeros);
#else
  auto w = param<Shape<64>>(b / "ln", "weight", kOnes);
  auto bias = param<Shape<64>>(b / "ln", "bias", kZeros);
#endif
  return sum<0, 1, 2>(layer_norm(x, w, bias));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

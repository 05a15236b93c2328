// Mistake: sum<3> of a rank-3 [batch, seq, 64] tensor.
// expect-first-gcc: error: .*stag::shape_error<.*"stag::sum: reduction axis out of range for the input.?'s rank \(valid: -rank \.\. rank-1\): \[batch, seq, 64\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>, void>>. "stag::sum: reduction axis out of range for the input's rank \(valid: -rank \.\. rank-1\)"
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = sum<3>(x);
#else
  auto y = sum<2>(x);
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

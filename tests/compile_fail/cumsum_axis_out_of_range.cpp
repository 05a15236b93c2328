// Mistake: cumsum<2> over a [batch, 8] tensor (rank 2: the last axis is 1, or -1).
// expect-first-gcc: error: .*stag::shape_error<.*"stag::cumsum: axis out of range for the input.?'s rank \(valid: -rank \.\. rank-1; a \[\] scalar has no axis\): \[batch, 8\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<8>>, void>>. "stag::cumsum: axis out of range for the input's rank \(valid: -rank \.\. rank-1; a \[\] scalar has no axis\)"
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
#ifdef STAG_BAD
  auto c = cumsum<2>(x);
#else
  auto c = cumsum<-1>(x);
#endif
  return sum<0, 1>(c);
});

int main() { return g.size() > 0 ? 0 : 1; }

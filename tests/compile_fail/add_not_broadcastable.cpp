// Mistake: adding a pooled [batch, 512] vector to a [batch, seq, 512] sequence without
// unsqueezing it: aligned from the right, seq meets batch.
// expect: stag::add: shapes are not broadcastable \(numpy rules; symbols match by name\)
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\): \[batch, seq, 512\] and \[batch, 512\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<512>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<512>>>>' "stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 512>>(b);
  auto pooled = mean<1>(x);
#ifdef STAG_BAD
  auto y = x + pooled;
#else
  auto y = x + unsqueeze<1>(pooled);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: adding the output of a per-head projection [batch, seq, heads] to a per-feature one
// [batch, seq, head_dim] of the same size. Two named dims are equal only by name; a plain int
// matches a named dim of its size (the good variant adds a plain [batch, seq, 8]).
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\): \[batch, seq, n_heads\] and \[batch, seq, d_head\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, n_heads>, stag::show::shape<stag::dims::batch, stag::dims::seq, d_head>>>' "stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;
STAG_NAMED_DIM(n_heads, 8);
STAG_NAMED_DIM(d_head, 8);

constexpr auto g = model([](Builder& b) {
  auto a = input<"a", Shape<batch, seq, n_heads>>(b);
#ifdef STAG_BAD
  auto c = input<"c", Shape<batch, seq, d_head>>(b);
#else
  auto c = input<"c", Shape<batch, seq, 8>>(b);
#endif
  return sum<0, 1, 2>(a + c);
});

int main() { return g.size() > 0 ? 0 : 1; }

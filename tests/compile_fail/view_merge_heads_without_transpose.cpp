// Mistake: merging the heads back with a view straight from [batch, heads, seq, head_dim]; the
// element count is right, but the rows of different positions get interleaved. The view rule
// (splits and merges of adjacent axes only) refuses it and says which transpose comes first.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::view: the target moves an axis past another \(a view only splits an axis or merges adjacent axes, in order\): \[batch, heads, seq, head_dim\] and \[batch, seq, 64\]. transpose<1, 2> first"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::heads<4>, stag::dims::seq, stag::dims::head_dim<16>>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<64>>, stag::show::hint<1, 1, 2>>>' "stag::view: the target moves an axis past another \(a view only splits an axis or merges adjacent axes, in order\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
  auto heads4 = split_heads<4>(x);  // [batch, heads, seq, head_dim]
#ifdef STAG_BAD
  auto y = view<batch, seq, 64>(heads4);
#else
  auto y = view<batch, seq, 64>(transpose<1, 2>(heads4));
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

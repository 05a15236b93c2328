// Mistake: splitting a named d_model = heads * head_dim (4 * 16) with plain ints in the wrong
// order ([16, 4]). A plain int may stand for a named dim of its size, in its place: 4 for
// heads, 16 for head_dim, so [4, 16] is accepted and [16, 4] is not.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::view: the split or merge does not follow the named dims in order: \[batch, seq, n_heads\*d_head\] and \[batch, seq, 16, 4\]. view to \[batch, seq, 4, 16\], then transpose<2, 3>"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::prod<stag::show::named<4, 'n', '_', 'h', 'e', 'a', 'd', 's'>, stag::show::named<16, 'd', '_', 'h', 'e', 'a', 'd'>>>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<16>, stag::show::n<4>>, stag::show::hint<2, 2, 3>>>' "stag::view: the split or merge does not follow the named dims in order"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;
constexpr auto n_heads = dim<"n_heads", 4>;
constexpr auto d_head = dim<"d_head", 16>;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, n_heads * d_head>>(b);
#ifdef STAG_BAD
  auto y = view<batch, seq, 16, 4>(x);
#else
  auto y = view<batch, seq, 4, 16>(x);
#endif
  return sum<0, 1, 2, 3>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

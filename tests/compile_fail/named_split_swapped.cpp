// Mistake: with named dims d_model = heads * head_dim, splitting it as [head_dim, heads]. With
// plain ints (16, 4 where 4, 16 was meant) this runs and scrambles every head; the names refuse
// it. Named static dims are declared with STAG_NAMED_DIM so that both compilers print them.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::view: the split or merge does not follow the named dims in order: \[batch, seq, n_heads\*d_head\] and \[batch, seq, d_head, n_heads\]. view to \[batch, seq, n_heads, d_head\], then transpose<2, 3>"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::prod<n_heads, d_head>>, stag::show::shape<stag::dims::batch, stag::dims::seq, d_head, n_heads>, stag::show::hint<2, 2, 3>>>' "stag::view: the split or merge does not follow the named dims in order"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;
STAG_NAMED_DIM(n_heads, 4);
STAG_NAMED_DIM(d_head, 16);
constexpr auto d_model = n_heads * d_head;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, d_model>>(b);
#ifdef STAG_BAD
  auto y = view<batch, seq, d_head, n_heads>(x);
#else
  auto y = view<batch, seq, n_heads, d_head>(x);
#endif
  return sum<0, 1, 2, 3>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

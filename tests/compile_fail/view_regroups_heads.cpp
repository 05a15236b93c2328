// Mistake: changing the number of heads with a view ([batch, seq, 4, 16] -> [batch, seq, 8, 8]):
// the counts agree, but the new axes cut across the old ones. A view splits one axis or merges
// adjacent ones; merge to [batch, seq, 64] first if a regrouping is really meant.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::view: adjacent axes are regrouped into others \(a view only splits one axis or merges adjacent axes\): \[batch, seq, 4, 16\] and \[batch, seq, 8, 8\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<4>, stag::show::n<16>>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<8>, stag::show::n<8>>, stag::show::hint<0, 0, 0>>>' "stag::view: adjacent axes are regrouped into others \(a view only splits one axis or merges adjacent axes\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 4, 16>>(b);
#ifdef STAG_BAD
  auto y = view<batch, seq, 8, 8>(x);
#else
  auto y = view<batch, seq, 64>(x);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: splitting heads with one view to [batch, heads, seq, head_dim] from
// [batch, seq, d_model]: the head axis would have to move past seq, which a view cannot do.
// The message says to split first ([batch, seq, 4, 16]) and transpose after.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::view: the target moves an axis past another \(a view only splits an axis or merges adjacent axes, in order\): \[batch, seq, 64\] and \[batch, 4, seq, 16\]. view to \[batch, seq, 4, 16\], then transpose<1, 2>"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<64>>, stag::show::shape<stag::dims::batch, stag::show::n<4>, stag::dims::seq, stag::show::n<16>>, stag::show::hint<2, 1, 2>>>' "stag::view: the target moves an axis past another \(a view only splits an axis or merges adjacent axes, in order\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto q = view<batch, 4, seq, 16>(x);
#else
  auto q = transpose<1, 2>(view<batch, seq, 4, 16>(x));
#endif
  return sum<0, 1, 2, 3>(q);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: heads == head_dim == 8, and the per-head gate [heads, 1, 1] is applied after a
// transpose of the wrong axes ([batch, head_dim, seq, heads] instead of [batch, heads, seq,
// head_dim]). With plain ints both are [.., 8, .., 8] and the gate silently scales features;
// with the library's named dims the broadcast refuses heads against head_dim.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::mul: shapes are not broadcastable \(numpy rules. symbols match by name\): \[batch, head_dim, heads, seq\] and \[heads, 1, 1\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::head_dim<8>, stag::dims::heads<8>, stag::dims::seq>, stag::show::shape<stag::dims::heads<8>, stag::show::n<1>, stag::show::n<1>>>>' "stag::mul: shapes are not broadcastable \(numpy rules. symbols match by name\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
  auto gate = param<Shape<heads<8>{}, 1, 1>>(b / "gate", "weight");
  auto split = view<batch, seq, heads<8>{}, head_dim<8>{}>(x);  // [batch, seq, heads, head_dim]
#ifdef STAG_BAD
  auto per_head = transpose<1, 3>(split);
#else
  auto per_head = transpose<1, 2>(split);
#endif
  return sum<0, 1, 2, 3>(per_head * gate);
});

int main() { return g.size() > 0 ? 0 : 1; }

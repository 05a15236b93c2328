// Mistake: 6 query heads over 4 key/value heads (each key/value head must serve a whole group
// of query heads). The layer says so itself, naming both counts, instead of reporting a
// d_model that does not divide.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::grouped_query_attention: the number of heads is not a multiple of the number of key/value heads \(heads, kv_heads\): \[6\] and \[4\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::n<6>>, stag::show::shape<stag::show::n<4>>>>' "stag::grouped_query_attention: the number of heads is not a multiple of the number of key/value heads \(heads, kv_heads\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 48>>(b);
#ifdef STAG_BAD
  auto a = grouped_query_attention<6, 4>(b / "attn", x, causal_keep<seq>(b));
#else
  auto a = grouped_query_attention<6, 2>(b / "attn", x, causal_keep<seq>(b));
#endif
  return sum<0, 1, 2>(a.out);
});

int main() { return g.size() > 0 ? 0 : 1; }

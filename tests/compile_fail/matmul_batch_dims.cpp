// Mistake: grouped-query attention without repeating the key heads: q has 8 heads, k has 2,
// so the batch dims [batch, 8] and [batch, 2] of q @ k^T do not broadcast.
// expect: stag::matmul: batch dimensions \(all but the last two\) are not broadcastable
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::matmul: batch dimensions \(all but the last two\) are not broadcastable: \[batch, 8, seq, 64\] and \[batch, 2, seq, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<8>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<2>, stag::show::name<'s', 'e', 'q'>, stag::show::n<64>>>>' "stag::matmul: batch dimensions \(all but the last two\) are not broadcastable"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 8, seq, 64>>(b);
#ifdef STAG_BAD
  auto k = input<"k", Shape<batch, 2, seq, 64>>(b);
#else
  auto k = expand<batch, 8, seq, 64>(input<"k", Shape<batch, 1, seq, 64>>(b));
#endif
  return sum<0, 1, 2, 3>(matmul_nt(q, k));
});

int main() { return g.size() > 0 ? 0 : 1; }

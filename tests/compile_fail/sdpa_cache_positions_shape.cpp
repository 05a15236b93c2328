// Mistake: one cache position for the whole batch ([1]) where sdpa over a cache needs one per
// row ([batch]).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::sdpa: the cache positions must be \[B\], one per row of q.?'s batch dim \(cache_positions\(pos\)\) \(q, positions\): \[batch, 4, 1, 16\] and \[1\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::n<1>, stag::show::n<16>>, stag::show::shape<stag::show::n<1>>>>. "stag::sdpa: the cache positions must be \[B\], one per row of q's batch dim \(cache_positions\(pos\)\) \(q, positions\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto max_len = sym<"max_len">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 4, 1, 16>>(b);
  auto k = input<"k", Shape<batch, 2, max_len, 16>>(b);
  auto v = input<"v", Shape<batch, 2, max_len, 16>>(b);
#ifdef STAG_BAD
  auto pos = input<"pos", Shape<1>, i32>(b);
#else
  auto pos = input<"pos", Shape<batch>, i32>(b);
#endif
  return sum<0, 1, 2, 3>(sdpa(q, k, v, cache_positions(pos)));
});

int main() { return g.size() > 0 ? 0 : 1; }

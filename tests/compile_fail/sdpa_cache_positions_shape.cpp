// Mistake: one cache position for the whole batch ([1]) where sdpa over a cache needs one per
// row ([batch]).
// clang-format off
// expect: stag::sdpa: the cache positions must be \[B\], one per row of q's batch dim
// expect-gcc: SP = [:a-z]*Shape<1>
// expect-gcc: required from here
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

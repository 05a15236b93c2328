// Mistake: writing keys of 8 heads into a cache of 2 key/value heads (forgot grouped heads).
// clang-format off
// expect: stag::cache_write: the rows must have the cache's dims except the second-to-last
// expect-gcc: SR = [:a-z]*Shape<1, 8, 1, 16>
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto max_len = sym<"max_len">;

constexpr auto g = model([](Builder& b) {
  auto cache = state<Shape<1, 2, max_len, 16>>(b / "attn", "k_cache");
  auto pos = input<"pos", Shape<1>, i32>(b);
#ifdef STAG_BAD
  auto k = input<"k", Shape<1, 8, 1, 16>>(b);
#else
  auto k = input<"k", Shape<1, 2, 1, 16>>(b);
#endif
  return cache_write(cache, k, pos);
});

int main() { return g.size() > 0 ? 0 : 1; }

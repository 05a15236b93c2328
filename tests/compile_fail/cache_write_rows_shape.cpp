// Mistake: writing keys of 8 heads into a cache of 2 key/value heads (forgot grouped heads).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::cache_write: the rows must have the cache.?'s dims except the second-to-last \(the positions\): \[1, 2, max_len, 16\] and \[1, 8, 1, 16\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::n<1>, stag::show::n<2>, stag::show::name<'m', 'a', 'x', '_', 'l', 'e', 'n'>, stag::show::n<16>>, stag::show::shape<stag::show::n<1>, stag::show::n<8>, stag::show::n<1>, stag::show::n<16>>>>. "stag::cache_write: the rows must have the cache's dims except the second-to-last \(the positions\)"
// expect-errors: 1
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

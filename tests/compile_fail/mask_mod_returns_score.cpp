// Mistake: a mask_mod that returns a number (a bias) instead of whether the key is kept, e.g.
// a soft window penalty written as a mask. flex_attention would compile it and treat any
// non-zero value as true; stag requires bool.
// expect: stag::sdpa: mask_mod\(b, h, q_idx, kv_idx, captured...\) must return bool
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<1, 4, seq, 8>>(b);
  auto k = input<"k", Shape<1, 4, seq, 8>>(b);
  auto v = input<"v", Shape<1, 4, seq, 8>>(b);
#ifdef STAG_BAD
  constexpr auto window = [](auto, auto, auto q, auto kv) { return q - kv; };
#else
  constexpr auto window = [](auto, auto, auto q, auto kv) { return kv <= q && q - kv < 16; };
#endif
  return sum<0, 1, 2, 3>(sdpa(q, k, v, mask_mod(window)));
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: a learned relative-position table [buckets, heads] read with one index in a
// score_mod (the head index forgotten). In PyTorch's flex_attention `table[bucket]` is a row,
// and adding it to a scalar score broadcasts or fails only when the kernel is compiled at run
// time; here the index count is checked against the tensor's rank while compiling.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::sdpa: a tensor captured by score_mod / mask_mod is indexed with one index per dim \(t\(i, j\) for a 2-d tensor\) \(its rank, the indices given\): \[2\] and \[1\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::n<2>>, stag::show::shape<stag::show::n<1>>>>' "stag::sdpa: a tensor captured by score_mod / mask_mod is indexed with one index per dim \(t\(i, j\) for a 2-d tensor\) \(its rank, the indices given\)"
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<1, 4, seq, 8>>(b);
  auto k = input<"k", Shape<1, 4, seq, 8>>(b);
  auto v = input<"v", Shape<1, 4, seq, 8>>(b);
  auto table = input<"table", Shape<7, 4>>(b);
#ifdef STAG_BAD
  constexpr auto rel = [](auto s, auto, auto, auto q, auto kv, auto t) {
    return s + t(std::clamp<std::int64_t>(kv - q, -3, 3) + 3);
  };
#else
  constexpr auto rel = [](auto s, auto, auto h, auto q, auto kv, auto t) {
    return s + t(std::clamp<std::int64_t>(kv - q, -3, 3) + 3, h);
  };
#endif
  return sum<0, 1, 2, 3>(sdpa(q, k, v, score_mod(rel, table), {.mask = AttnMask::causal}));
});

int main() { return g.size() > 0 ? 0 : 1; }

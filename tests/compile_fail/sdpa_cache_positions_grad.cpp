// Mistake: training through sdpa over a key/value cache (cache_positions), which is for decoding
// and has no gradient; stag::grad stops compilation with a message that says what to use.
// clang-format off
// expect: stag::grad: sdpa over a key/value cache \(cache_positions\) has no gradient: it is for decoding
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto len = sym<"len">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 2, 3, 8>>(b);
  auto q = x * param<Shape<8>>(b / "scale", "weight");
  auto k = input<"k", Shape<batch, 2, len, 8>>(b);
  auto v = input<"v", Shape<batch, 2, len, 8>>(b);
#ifdef STAG_BAD
  auto pos = input<"pos", Shape<batch>, i32>(b);
  auto o = sdpa(q, k, v, cache_positions(pos), {.mask = AttnMask::causal});
#else
  auto o = sdpa(q, k, v, {.mask = AttnMask::causal});
#endif
  return sum<0, 1, 2, 3>(o);
});
constexpr auto training_graph = grad<g>();

int main() {
  return training_graph.size() > g.size() ? 0 : 1;
}

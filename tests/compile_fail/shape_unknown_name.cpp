// Mistake: a compile-time shape check that names a node that does not exist (a typo:
// "enc.0.w_q.weigth"). The assertion must not pass vacuously; graph lookup stops compilation.
// expect: stag: no node of that name in the graph
// expect-gcc: shape_unknown_name\.cpp:[0-9]+:[0-9]+: error: non-constant condition for static assertion
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 16>>(b);
  auto w = param<Shape<16, 16>>(b / "enc" / 0 / "w_q", "weight");
  return sum<0, 1>(matmul(x, w));
});

#ifdef STAG_BAD
static_assert(g.shape("enc.0.w_q.weigth") == Shape<16, 16>::value);
#else
static_assert(g.shape("enc.0.w_q.weight") == Shape<16, 16>::value);
#endif

int main() { return g.size() > 0 ? 0 : 1; }

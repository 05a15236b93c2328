// Mistake: maximum of an f32 and an f64 tensor (no implicit casts).
// expect: stag::maximum: operands must have the same numeric dtype
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
#ifdef STAG_BAD
  auto floor_value = input<"floor_value", Shape<>, f64>(b);
#else
  auto floor_value = input<"floor_value", Shape<>>(b);
#endif
  return sum<0, 1>(maximum(x, floor_value));
});

int main() { return g.size() > 0 ? 0 : 1; }

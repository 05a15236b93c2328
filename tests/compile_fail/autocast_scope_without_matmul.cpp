// Mistake: autocasting a scope by a name that is not in the model (`decoder` for `dec`): the
// pass would change nothing and the model would run in f32 unnoticed; it stops compilation.
// clang-format off
// expect: stag::autocast: no f32 matmul to cast \(in the scopes given\)
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
  auto y = linear<4>(b / "dec" / "out", x);
  return sum<0, 1>(y);
});
#ifdef STAG_BAD
constexpr auto low = autocast<g, bf16, "decoder">();
#else
constexpr auto low = autocast<g, bf16, "dec">();
#endif

int main() {
  return low.size() > g.size() ? 0 : 1;
}

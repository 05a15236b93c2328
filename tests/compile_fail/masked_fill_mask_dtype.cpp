// Mistake: a float 0/1 mask passed to masked_fill (it must be bool; compare or cast first).
// clang-format off
// expect: stag::masked_fill: the mask must be a bool tensor
// expect-gcc: SM = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 6>; [:a-z]*DType TM = stag::DType::f32
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 6>>(b);
#ifdef STAG_BAD
  auto mask = input<"mask", Shape<seq, 6>>(b);
#else
  auto mask = input<"mask", Shape<seq, 6>, boolean>(b);
#endif
  return sum<0, 1>(masked_fill(x, mask, 0.0));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

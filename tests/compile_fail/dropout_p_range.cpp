// Mistake: dropout with p = 1.5 (p must be at least 0 and below 1; p = 1 would divide by 0).
// Inside stag::model the check runs at compile time, so the mistake stops compilation.
// clang-format off
// expect: stag::dropout: p must be in .0, 1. \(the probability of zeroing an element\)
// expect-gcc: constexpr.+ expansion of .+stag::dropout<.+>\(x, 1.5e\+0\)
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 32>>(b);
#ifdef STAG_BAD
  return sum<0, 1>(dropout(x, 1.5));
#else
  return sum<0, 1>(dropout(x, 0.5));
#endif
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: rotary positions for the whole prompt ([seq]) applied to one new token ([.., 1, Dh]).
// clang-format off
// expect: stag::rope: positions must be \[S\], one per row of the input's second-to-last dim
// expect-gcc: SP = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<1, 4, 1, 16>>(b);
#ifdef STAG_BAD
  auto p = input<"p", Shape<seq>, i32>(b);
#else
  auto p = input<"p", Shape<1>, i32>(b);
#endif
  return sum<0, 1, 2, 3>(rope(q, p));
});

int main() { return g.size() > 0 ? 0 : 1; }

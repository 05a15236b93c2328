// Mistake: concatenating heads [batch, 4, seq, 16] and [batch, 8, seq, 16] along the last axis
// (the head counts differ; only the concat axis may differ).
// clang-format off
// expect: stag::concat: the inputs' dims differ outside the concat axis
// expect-gcc: Ss = \{[:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 4, [:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 16>, [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 8, [:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 16>\}
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 4, seq, 16>>(b);
#ifdef STAG_BAD
  auto y = input<"y", Shape<batch, 8, seq, 16>>(b);
#else
  auto y = input<"y", Shape<batch, 4, seq, 16>>(b);
#endif
  return sum<0, 1, 2, 3>(concat<-1>(x, y));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

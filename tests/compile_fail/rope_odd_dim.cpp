// Mistake: rope on heads of dim 63 (rope rotates pairs (i, i + Dh/2): Dh must be even).
// clang-format off
// expect: stag::rope: the last dim \(head dim Dh\) must be even
// expect-gcc: S = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 4, [:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 63>
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto q = input<"q", Shape<batch, 4, seq, 63>>(b);
#else
  auto q = input<"q", Shape<batch, 4, seq, 64>>(b);
#endif
  return sum<0, 1, 2, 3>(rope(q));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

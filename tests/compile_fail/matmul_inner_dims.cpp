// Mistake: multiplying [batch, seq, 64] by [32, 64] (the weight needs a transpose).
// expect: stag::matmul: inner dimensions differ
// expect-gcc: SA = stag::Shape<stag::Sym<stag::fixed_string<6>\{"batch"\}>\(\), stag::Sym<stag::fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: SB = stag::Shape<32, 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto w = param<Shape<32, 64>>(b / "proj", "weight");
#else
  auto w = param<Shape<64, 32>>(b / "proj", "weight");
#endif
  return sum<0, 1, 2>(matmul(x, w));
});

int main() { return g.size() > 0 ? 0 : 1; }

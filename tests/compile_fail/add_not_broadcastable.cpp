// Mistake: adding a pooled [batch, 512] vector to a [batch, seq, 512] sequence without
// unsqueezing it: aligned from the right, seq meets batch.
// expect: stag::add: shapes are not broadcastable \(numpy rules; symbols match by name\)
// expect-gcc: SA = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 512>
// expect-gcc: SB = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 512>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 512>>(b);
  auto pooled = mean<1>(x);
#ifdef STAG_BAD
  auto y = x + pooled;
#else
  auto y = x + unsqueeze<1>(pooled);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

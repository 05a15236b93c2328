// Mistake: transpose<1, 3> on a rank-3 [batch, seq, 64] tensor (the head split was skipped).
// expect: stag::transpose: axis out of range for the input's rank
// expect-gcc: int I = 1; int J = 3; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = transpose<1, 3>(x);
#else
  auto y = transpose<1, 3>(view<batch, seq, 4, 16>(x));
#endif
  return sum<0, 1, 2>(sum<-1>(y));
});

int main() { return g.size() > 0 ? 0 : 1; }

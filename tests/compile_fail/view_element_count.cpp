// Mistake: flattening [batch, seq, 512] to [batch * seq, 256]: half the elements are missing.
// expect: stag::view: the element counts differ \(input shape vs target shape\)
// expect-gcc: Ds = \{Prod<1, Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>\(\), 256\}
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 512>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 512>>(b);
#ifdef STAG_BAD
  auto flat = view<batch * seq, 256>(x);
#else
  auto flat = view<batch * seq, 512>(x);
#endif
  return sum<0, 1>(flat);
});

int main() { return g.size() > 0 ? 0 : 1; }

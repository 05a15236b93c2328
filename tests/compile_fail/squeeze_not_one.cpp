// Mistake: squeeze<1> of [batch, seq, 64], whose dim 1 is seq, not 1 (PyTorch's squeeze(1)
// silently does nothing here).
// expect: stag::squeeze: the squeezed dim is not 1
// expect-gcc: int Axis = 1; S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = squeeze<1>(x);
#else
  auto y = squeeze<1>(mean<1>(x, keepdim));
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake (docs/tutorial-attention-variant.md): ALiBi's per-head slopes shaped [heads, 1]
// instead of [heads, 1, 1], multiplied by the [seq, seq] distances: aligned from the right,
// heads meets seq. In PyTorch this runs whenever heads == seq and biases the wrong axis.
// expect: stag::mul: shapes are not broadcastable \(numpy rules; symbols match by name\)
// expect-gcc: SA = Shape<4, 1>
// expect-gcc: SB = Shape<Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq>>(b);
  auto pos = positions<seq>(b);
  auto dist = cast<DType::f32>(unsqueeze<1>(pos) - unsqueeze<0>(pos));  // [seq, seq]
  auto heads = cast<DType::f32>(positions<4>(b, 1));
#ifdef STAG_BAD
  auto slope = view<4, 1>(exp(heads * -2.0));
#else
  auto slope = view<4, 1, 1>(exp(heads * -2.0));
#endif
  return sum<0, 1, 2>(slope * dist) + sum<0>(x);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: adding integer positions [seq] (i32) to float activations [batch, seq] without a cast.
// expect: stag::add: operands must have the same numeric dtype \(no implicit casts\)
// expect-gcc: SA = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>; DType TA = stag::DType::f32
// expect-gcc: SB = Shape<Sym<fixed_string<4>\{"seq"\}>\(\)>; DType TB = stag::DType::i32
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq>>(b);
#ifdef STAG_BAD
  auto y = x + positions<seq>(b);
#else
  auto y = x + cast<f32>(positions<seq>(b));
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: scaling f32 activations by an f64 parameter: stag does not promote dtypes.
// expect: stag::mul: operands must have the same numeric dtype \(no implicit casts\)
// expect-gcc: SA = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 16>; DType TA = stag::DType::f32
// expect-gcc: SB = Shape<16>; DType TB = stag::DType::f64
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 16>>(b);
#ifdef STAG_BAD
  auto gain = param<Shape<16>, f64>(b / "norm", "gain", kOnes);
#else
  auto gain = param<Shape<16>>(b / "norm", "gain", kOnes);
#endif
  return sum<0, 1>(x * gain);
});

int main() { return g.size() > 0 ? 0 : 1; }

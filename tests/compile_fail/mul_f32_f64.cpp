// Mistake: scaling f32 activations by an f64 parameter: stag does not promote dtypes.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::mul: operands must have the same numeric dtype \(no implicit casts\): f32 \[batch, 16\] and f64 \[16\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::f32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<16>>>, stag::show::typed<stag::DType::f64, stag::show::shape<stag::show::n<16>>>>>' "stag::mul: operands must have the same numeric dtype \(no implicit casts\)"
// expect-errors: 1
// clang-format on
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

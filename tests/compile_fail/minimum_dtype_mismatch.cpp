// Mistake: maximum of an f32 and an f64 tensor (no implicit casts).
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::maximum: operands must have the same numeric dtype \(no implicit casts\): f32 \[batch, 8\] and f64 \[\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::f32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<8>>>, stag::show::typed<stag::DType::f64, stag::show::shape<>>>>' "stag::maximum: operands must have the same numeric dtype \(no implicit casts\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
#ifdef STAG_BAD
  auto floor_value = input<"floor_value", Shape<>, f64>(b);
#else
  auto floor_value = input<"floor_value", Shape<>>(b);
#endif
  return sum<0, 1>(maximum(x, floor_value));
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: log of integer token counts (a log-frequency feature) without a cast.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::log: input must be f32 or f64; for an integer tensor write cast<f32>\(x\) first: i32 \[batch, 100\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::i32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<100>>>, void>>' "stag::log: input must be f32 or f64; for an integer tensor write cast<f32>\(x\) first"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto counts = input<"counts", Shape<batch, 100>, i32>(b);
#ifdef STAG_BAD
  auto y = log(counts + 1.0);
#else
  auto y = log(cast<f32>(counts) + 1.0);
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

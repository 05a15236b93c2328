// Mistake: the mean of integer token counts, which would truncate (PyTorch refuses it too).
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::mean: input must be f32 or f64 \(an integer mean would truncate\); cast<f32>\(x\) first: i32 \[batch, 8\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::i32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<8>>>, void>>' "stag::mean: input must be f32 or f64 \(an integer mean would truncate\); cast<f32>\(x\) first"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto counts = input<"counts", Shape<batch, 8>, i32>(b);
#ifdef STAG_BAD
  auto avg = mean<0>(counts);
#else
  auto avg = mean<0>(cast<f32>(counts));
#endif
  return sum<0>(avg);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: differentiating an inference graph whose weights are stored in bf16
// (stag::bf16_weights) to fine-tune it: its gradients and updates would be rounded to bf16, and
// AdamW's small steps vanish in bf16's 8-bit mantissa. One error names the parameter; the good
// twin fine-tunes with autocast (bf16 matmuls, f32 master weights).
// clang-format off
// expect: stag::grad: .* stored in bf16 \(stag::bf16_weights graphs are for inference\); train with f32 weights, or stag::autocast
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::grad: parameter \\'dec.out.weight\\' is stored in bf16
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::name<'d', 'e', 'c', '.', 'o', 'u', 't', '.', 'w', 'e', 'i', 'g', 'h', 't'>>' "stag::grad: a parameter is stored in bf16
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
  auto y = linear<4>(b / "dec" / "out", x);
  return sum<0, 1>(y);
});
constexpr auto inference = bf16_weights<g>();
constexpr auto mixed = autocast<g>();
#ifdef STAG_BAD
constexpr auto train = grad<inference>();
#else
constexpr auto train = grad<mixed>();
#endif

int main() {
  return train.size() > g.size() ? 0 : 1;
}

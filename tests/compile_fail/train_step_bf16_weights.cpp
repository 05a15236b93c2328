// Mistake: a training step of an inference graph whose weights are stored in bf16
// (stag::bf16_weights): AdamW would update bf16 copies, where its small steps vanish. One error
// names the parameter; the good twin trains with autocast (f32 master weights).
// clang-format off
// expect: stag::grad: .* stored in bf16 \(stag::bf16_weights graphs are for inference\)
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::grad: parameter \\'enc.proj.weight\\' is stored in bf16
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::name<'e', 'n', 'c', '.', 'p', 'r', 'o', 'j', '.', 'w', 'e', 'i', 'g', 'h', 't'>>' "stag::grad: a parameter is stored in bf16
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
  auto y = linear<4>(b / "enc" / "proj", x);
  return sum<0, 1>(y * y);
});
constexpr auto inference = bf16_weights<g>();
constexpr auto mixed = autocast<g>();
#ifdef STAG_BAD
constexpr auto step = train_step<inference, AdamW{}>();
#else
constexpr auto step = train_step<mixed, AdamW{}>();
#endif

int main() {
  return step.size() > g.size() ? 0 : 1;
}

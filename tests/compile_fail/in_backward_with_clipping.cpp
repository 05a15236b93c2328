// Mistake: clipping gradients by their global norm while updating each parameter in the
// backward pass. The norm is known only after the last gradient, when every update has run.
// clang-format off
// expect: stag::train_step: in_backward updates each parameter before the global gradient norm is known, so it cannot clip
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
  auto y = linear<4>(b / "out", x);
  return mean<0, 1>(y * y);
});
#ifdef STAG_BAD
constexpr auto step = train_step<g, AdamW{.clip_norm = 1.0, .in_backward = true}>();
#else
constexpr auto step = train_step<g, AdamW{.in_backward = true}>();
#endif

int main() {
  return step.size() > g.size() ? 0 : 1;
}

// Mistake: float labels (one-hot-style or read from a float column); cross_entropy takes i32
// or i64 class indices.
// clang-format off
// expect: stag::cross_entropy: labels must be i32 or i64 class indices
// expect-gcc: SY = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\)>; (stag::)?DType TY = stag::DType::f32
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto logits = input<"logits", Shape<batch, 3>>(b);
#ifdef STAG_BAD
  auto labels = input<"labels", Shape<batch>, f32>(b);
#else
  auto labels = input<"labels", Shape<batch>, i64>(b);
#endif
  return cross_entropy(logits, labels);
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

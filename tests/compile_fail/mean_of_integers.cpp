// Mistake: the mean of integer token counts, which would truncate (PyTorch refuses it too).
// expect: stag::mean: input must be f32 or f64 \(an integer mean would truncate\); cast<f32>\(x\) first
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 8>; DType T = stag::DType::i32
// expect-gcc: required from here
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

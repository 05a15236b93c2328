// Mistake: log of integer token counts (a log-frequency feature) without a cast.
// expect: stag::log: input must be f32 or f64; for an integer tensor write cast<f32>\(x\) first
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 100>; DType T = stag::DType::i32
// expect-gcc: required from here
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

// Mistake: clamp of integer ids (clamp is float only; cast first or clamp the float values).
// expect: stag::clamp: input must be f32 or f64
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto ids = input<"ids", Shape<batch, 8>, i32>(b);
#ifdef STAG_BAD
  auto c = cast<f32>(clamp(ids, 0, 7));
#else
  auto c = clamp(cast<f32>(ids), 0, 7);
#endif
  return sum<0, 1>(c);
});

int main() { return g.size() > 0 ? 0 : 1; }

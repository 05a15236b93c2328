// Mistake: argmax of a bool mask (PyTorch refuses it too): cast it to i32 or f32 first.
// clang-format off
// expect: stag::argmax: input must be f32, f64, i32 or i64
// expect-gcc: S = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\), 9>; [:a-z]*DType T = stag::DType::boolean
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<batch, 9>, boolean>(b);
#else
  auto keep = input<"keep", Shape<batch, 9>, i32>(b);
#endif
  return sum<0>(cast<f32>(argmax<-1>(keep)));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: building a padding mask from float lengths (they must be i32 or i64 counts).
// clang-format off
// expect: stag::padding_mask: lengths must be i32 or i64
// expect-gcc: SL = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<6>\{"batch"\}>\(\)>; [:a-z]*DType TL = stag::DType::f32
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto lengths = input<"lengths", Shape<batch>>(b);
#else
  auto lengths = input<"lengths", Shape<batch>, i32>(b);
#endif
  return sum<0, 1>(cast<f32>(padding_mask<16>(lengths)));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: combining float score tensors with & (a bool op): compare them first, e.g. lt(a, b).
// clang-format off
// expect: stag::logical_and: operands must be bool tensors
// expect-gcc: SA = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 5>; [:a-z]*DType TA = stag::DType::f32
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto x = input<"x", Shape<seq, 5>>(b);
  auto y = input<"y", Shape<seq, 5>>(b);
#else
  auto x = input<"x", Shape<seq, 5>, boolean>(b);
  auto y = input<"y", Shape<seq, 5>, boolean>(b);
#endif
  return sum<0, 1>(cast<f32>(x & y));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

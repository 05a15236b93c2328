// Mistake: passing a 0/1 float mask as where's condition (it must be bool: compare or cast).
// clang-format off
// expect: stag::where: the condition must be a bool tensor
// expect-gcc: SC = [:a-z]*Shape<[:a-z]*Sym<[:a-z]*fixed_string<4>\{"seq"\}>\(\), 8>; [:a-z]*DType TC = stag::DType::f32
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 8>>(b);
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<seq, 8>>(b);
#else
  auto keep = input<"keep", Shape<seq, 8>, boolean>(b);
#endif
  return sum<0, 1>(where(keep, x, 0.0));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: combining float score tensors with & (a bool op): compare them first, e.g. lt(a, b).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::logical_and: operands must be bool tensors \(compare or cast first\): \[seq, 5\] and \[seq, 5\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<5>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<5>>>>. "stag::logical_and: operands must be bool tensors \(compare or cast first\)"
// expect-errors: 1
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

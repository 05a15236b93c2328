// Mistake: view used where a transpose was meant: [batch, seq, 64] -> [seq, batch, 64]
// keeps the element count but scrambles the data.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the target moves an axis past another .*: \[batch, seq, 64\] and \[seq, batch, 64\]; transpose<0, 1> first"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::hint<1, 0, 1>>>. \"stag::view: the target moves an axis past another
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
#ifdef STAG_BAD
  auto y = view<seq, batch, 64>(x);
#else
  auto y = transpose<0, 1>(x);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: splitting d_model = 500 into 8 heads of 64 (8 * 64 = 512 != 500).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the element counts differ \(input shape, target shape\): \[batch, seq, 500\] and \[batch, seq, 8, 64\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::n<500>>, stag::show::shape<.*stag::show::n<8>, stag::show::n<64>>>>. \"stag::view: the element counts differ
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int heads = 8;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  constexpr int d_model = 500;
#else
  constexpr int d_model = 512;
#endif
  auto x = input<"x", Shape<batch, seq, d_model>>(b);
  auto q = transpose<1, 2>(view<batch, seq, heads, 64>(x));
  return sum<0, 1, 2, 3>(q);
});

int main() { return g.size() > 0 ? 0 : 1; }

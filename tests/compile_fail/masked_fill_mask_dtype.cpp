// Mistake: a float 0/1 mask passed to masked_fill (it must be bool; compare or cast first).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::masked_fill: the mask must be a bool tensor: \[seq, 6\] and \[seq, 6\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<6>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<6>>>>. "stag::masked_fill: the mask must be a bool tensor"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 6>>(b);
#ifdef STAG_BAD
  auto mask = input<"mask", Shape<seq, 6>>(b);
#else
  auto mask = input<"mask", Shape<seq, 6>, boolean>(b);
#endif
  return sum<0, 1>(masked_fill(x, mask, 0.0));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: rotary positions applied right after the head split, in the [batch, seq, heads,
// head_dim] layout (as minimind's code does, where its rotation tables are laid out for it).
// stag's rope rotates along the second-to-last axis, here the heads: every token would be
// rotated by its head index, whatever its position. Transpose to [batch, heads, seq, head_dim]
// first.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::rope: rope rotates along the second-to-last axis, the sequence, but it is static after a symbolic axis: the heads of the \[B, S, H, Dh\] layout \(transpose<1, 2> to \[B, H, S, Dh\] first\): \[batch, seq, 4, 16\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<4>, stag::show::n<16>>>>. "stag::rope: rope rotates along the second-to-last axis, the sequence, but it is static after a symbolic axis: the heads of the \[B, S, H, Dh\] layout \(transpose<1, 2> to \[B, H, S, Dh\] first\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
  auto q = view<batch, seq, 4, 16>(x);  // [batch, seq, heads, head_dim]
#ifdef STAG_BAD
  auto r = transpose<1, 2>(rope(q));
#else
  auto r = rope(transpose<1, 2>(q));
#endif
  return sum<0, 1, 2, 3>(r);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: rotary positions for the whole prompt ([seq]) applied to one new token ([.., 1, Dh]).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::rope: positions must be \[S\], one per row of the input.?'s second-to-last dim, or \[B, S\], one set per batch row \(input, positions\): \[1, 4, 1, 16\] and \[seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::n<1>, stag::show::n<4>, stag::show::n<1>, stag::show::n<16>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>>>>. "stag::rope: positions must be \[S\], one per row of the input's second-to-last dim, or \[B, S\], one set per batch row \(input, positions\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<1, 4, 1, 16>>(b);
#ifdef STAG_BAD
  auto p = input<"p", Shape<seq>, i32>(b);
#else
  auto p = input<"p", Shape<1>, i32>(b);
#endif
  return sum<0, 1, 2, 3>(rope(q, p));
});

int main() { return g.size() > 0 ? 0 : 1; }

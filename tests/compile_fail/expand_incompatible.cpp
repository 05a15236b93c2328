// Mistake: expanding a [batch, seq] mask to [batch, heads, seq, seq] without unsqueezing it:
// aligned from the right, its batch dim meets seq.
// expect-first-gcc: error: .*stag::shape_error<.*"stag::expand: each input dim must equal the target dim or be 1: \[batch, seq\] and \[batch, 4, seq, seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::name<'s', 'e', 'q'>, stag::show::name<'s', 'e', 'q'>>>>. "stag::expand: each input dim must equal the target dim or be 1"
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto mask = expand<batch, 4, seq, seq>(keep);
#else
  auto mask = expand<batch, 4, seq, seq>(unsqueeze<1>(unsqueeze<1>(keep)));
#endif
  return sum<0, 1, 2, 3>(cast<f32>(mask));
});

int main() { return g.size() > 0 ? 0 : 1; }

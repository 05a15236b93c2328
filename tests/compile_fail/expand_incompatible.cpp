// Mistake: expanding a [batch, seq] mask to [batch, heads, seq, seq] without unsqueezing it:
// aligned from the right, its batch dim meets seq.
// expect: stag::expand: each input dim must equal the target dim or be 1
// expect-gcc: Ds = \{Sym<fixed_string<6>\{"batch"\}>\(\), 4, Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)\}
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
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

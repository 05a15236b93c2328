// Mistake: `~keep` where keep was meant. With a plain bool input this runs and attends only to
// the padding. An input declared with keep_input has a keep mask's type; `~` turns it into a
// padding mask, which padding_keep refuses.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::padding_keep: wants a keep mask \(true at real tokens\) but got a padding mask \(true at padding\); use from_key_padding_mask\(pad\) or padding_keep\(~pad\) \(mask, polarity\): \[batch, seq\] and a padding mask \(true at padding\)"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq>, stag::detail::polarity_shown<stag::MaskPolarity::ignore>>>. "stag::padding_keep: wants a keep mask \(true at real tokens\) but got a padding mask \(true at padding\); use from_key_padding_mask\(pad\) or padding_keep\(~pad\) \(mask, polarity\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto keep = keep_input<"keep", Shape<batch, seq>>(b);
#ifdef STAG_BAD
  auto mask = padding_keep(~keep);
#else
  auto mask = padding_keep(keep);
#endif
  return sum<0, 1, 2>(multi_head_attention<4>(b / "attn", x, x, mask).out);
});

int main() { return g.size() > 0 ? 0 : 1; }

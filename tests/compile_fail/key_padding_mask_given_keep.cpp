// Mistake: a keep mask (true at real tokens) handed to from_key_padding_mask, which reads
// PyTorch's convention (true at padding) and negates it: attention would see only the padding.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::from_key_padding_mask: wants a padding mask \(true at padding\) but got a keep mask \(true at real tokens\); use padding_keep\(keep\) \(mask, polarity\): \[batch, seq\] and a keep mask \(true at real tokens\)"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq>, stag::detail::polarity_shown<stag::MaskPolarity::keep>>>. "stag::from_key_padding_mask: wants a padding mask \(true at padding\) but got a keep mask \(true at real tokens\); use padding_keep\(keep\) \(mask, polarity\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto keep = keep_input<"keep", Shape<batch, seq>>(b);
#ifdef STAG_BAD
  auto mask = from_key_padding_mask(keep);
#else
  auto mask = padding_keep(keep);
#endif
  return sum<0, 1, 2>(multi_head_attention<4>(b / "attn", x, x, mask).out);
});

int main() { return g.size() > 0 ? 0 : 1; }

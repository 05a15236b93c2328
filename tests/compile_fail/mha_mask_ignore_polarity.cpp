// Mistake: the data comes with PyTorch's key_padding_mask (true at padding) and is declared as
// such, then handed to attention, which keeps where the mask is true. The one named call
// from_key_padding_mask converts it; an ignore mask where a keep mask is expected is refused.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: this is an ignore mask \(true = masked out, as PyTorch key_padding_mask\). attention in stag takes keep masks \(true = attend\): flip it with ~ or make it with from_key_padding_mask\(pad\): \[batch, 1, seq\] and \[batch, seq, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::seq>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::dims::seq>>>' "stag::multi_head_attention: this is an ignore mask \(true = masked out, as PyTorch key_padding_mask\). attention in stag takes keep masks \(true = attend\): flip it with ~ or make it with from_key_padding_mask\(pad\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto pad = input<"key_padding_mask", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto mask = as_mask<MaskPolarity::ignore>(unsqueeze<1>(pad));
#else
  auto mask = from_key_padding_mask(pad);
#endif
  return sum<0, 1, 2>(multi_head_attention<4>(b / "attn", x, x, mask).out);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: passing a bare bool tensor as the attention mask. Whether true means "attend" (stag)
// or "ignore" (PyTorch's key_padding_mask) is not written anywhere, so the layer asks for a
// typed mask: padding_keep(keep), from_key_padding_mask(pad), causal_keep<seq>(g), or their &.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: the mask does not say what true means: pass padding_keep\(keep\) \(true = attend\), from_key_padding_mask\(pad\) \(PyTorch key_padding_mask, true = ignore\), causal_keep<seq>\(g\) or their &: \[batch, 1, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::seq>, void>>' "stag::multi_head_attention: the mask does not say what true means: pass padding_keep\(keep\) \(true = attend\), from_key_padding_mask\(pad\) \(PyTorch key_padding_mask, true = ignore\), causal_keep<seq>\(g\) or their &"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto a = multi_head_attention<4>(b / "attn", x, x, unsqueeze<1>(keep));
#else
  auto a = multi_head_attention<4>(b / "attn", x, x, padding_keep(keep));
#endif
  return sum<0, 1, 2>(a.out);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: `~` on a keep mask (meant as "the padded positions") passed to an encoder layer.
// `~` flips the polarity in the type as well as the values, so the layer (not an op deep
// inside it) reports an ignore mask where it takes a keep mask.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::encoder_layer: this is an ignore mask \(true = masked out, as PyTorch key_padding_mask\). attention in stag takes keep masks \(true = attend\): flip it with ~ or make it with from_key_padding_mask\(pad\): \[batch, 1, seq\] and \[batch, seq, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::seq>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::dims::seq>>>' "stag::encoder_layer: this is an ignore mask \(true = masked out, as PyTorch key_padding_mask\). attention in stag takes keep masks \(true = attend\): flip it with ~ or make it with from_key_padding_mask\(pad\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto mask = ~padding_keep(keep);
#else
  auto mask = ~~padding_keep(keep);
#endif
  return sum<0, 1, 2>(encoder_layer<4, 64>(b / "enc", x, mask));
});

int main() { return g.size() > 0 ? 0 : 1; }

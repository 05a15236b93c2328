// Mistake: a padding mask unsqueezed on the query axis ([batch, seq, 1]) and declared a keep
// mask: it broadcasts to the scores, but masks whole query rows instead of padded keys. A key
// axis of size 1 is refused; query_keep(keep) says so explicitly when rows are meant.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: the last axis of the mask must cover the keys, but it is 1 \(a mask unsqueezed on the query axis\). use padding_keep\(keep\) for keys, query_keep\(keep\) if you mean to mask queries: \[batch, seq, 1\] and \[batch, seq, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<1>>, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::dims::seq>>>' "stag::multi_head_attention: the last axis of the mask must cover the keys, but it is 1 \(a mask unsqueezed on the query axis\). use padding_keep\(keep\) for keys, query_keep\(keep\) if you mean to mask queries"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto mask = as_mask<MaskPolarity::keep>(unsqueeze<2>(keep));
#else
  auto mask = padding_keep(keep);
#endif
  return sum<0, 1, 2>(multi_head_attention<4>(b / "attn", x, x, mask).out);
});

int main() { return g.size() > 0 ? 0 : 1; }

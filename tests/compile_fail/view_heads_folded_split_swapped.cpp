// Mistake: heads folded into the batch for a batched matmul as [batch * heads, seq, d_head]
// (from [batch, heads, seq, d_head]) and unfolded in the other convention, [heads, batch, ...].
// The sizes agree, so this runs and hands each sentence another sentence's heads. The product
// remembers that batch is its outer factor.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the split or merge reorders a product.?'s symbolic factors .*: \[batch\*n_heads, seq, seq\] and \[n_heads, batch, seq, seq\]; view to \[batch, n_heads, seq, seq\], then transpose<0, 1>"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::shape<stag::show::prod<stag::dims::batch, n_heads>, stag::dims::seq, stag::dims::seq>, stag::show::shape<n_heads, stag::dims::batch, stag::dims::seq, stag::dims::seq>, stag::show::hint<2, 0, 1>>>. "stag::view: the split or merge reorders a product's symbolic factors
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;
STAG_NAMED_DIM(n_heads, 4);
STAG_NAMED_DIM(d_head, 16);

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, n_heads, seq, d_head>>(b);
  auto folded = view<batch * n_heads, seq, d_head>(q);
  auto scores = matmul(folded, transpose<1, 2>(folded));
#ifdef STAG_BAD
  auto y = view<n_heads, batch, seq, seq>(scores);
#else
  auto y = view<batch, n_heads, seq, seq>(scores);
#endif
  return sum<0, 1, 2, 3>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

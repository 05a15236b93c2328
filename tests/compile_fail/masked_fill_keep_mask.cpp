// Mistake: masked_fill(scores, keep, -inf): masked_fill fills where its mask is true, so this
// blanks the real tokens and keeps the padding. A typed keep mask is refused; ~mask is what
// masked_fill wants.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::masked_fill: it fills where its mask is true, but this is a keep mask \(true = attend\); pass ~mask \(scores, mask\): \[batch, 4, seq, seq\] and \[batch, 1, seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<4>, stag::dims::seq, stag::dims::seq>, stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::seq>>>. "stag::masked_fill: it fills where its mask is true, but this is a keep mask \(true = attend\); pass ~mask \(scores, mask\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 4, seq, 16>>(b);
  auto keep = keep_input<"keep", Shape<batch, seq>>(b);
  auto scores = matmul_nt(q, q);
#ifdef STAG_BAD
  auto filled = masked_fill(scores, padding_keep(keep), -1e9);
#else
  auto filled = masked_fill(scores, ~padding_keep(keep), -1e9);
#endif
  return sum<0, 1, 2, 3>(matmul(softmax<-1>(filled), q));
});

int main() { return g.size() > 0 ? 0 : 1; }

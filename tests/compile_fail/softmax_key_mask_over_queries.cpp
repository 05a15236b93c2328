// Mistake: hand-written attention whose softmax runs over the query axis (dim -2) of scores
// [batch, heads, q, k] masked on the key axis. The shapes broadcast, so with a plain bool mask
// this runs, and each key's column sums to one instead of each query's row.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::softmax: the scores are masked along their last axis \(the keys\) but the softmax runs along another axis; an attention softmax runs along the keys: softmax<-1> \(scores, mask\): \[batch, 4, seq, seq\] and \[batch, 1, seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<4>, stag::dims::seq, stag::dims::seq>, stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::seq>>>. "stag::softmax: the scores are masked along their last axis \(the keys\) but the softmax runs along another axis; an attention softmax runs along the keys: softmax<-1> \(scores, mask\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 4, seq, 16>>(b);
  auto keep = keep_input<"keep", Shape<batch, seq>>(b);
  auto scores = matmul_nt(q, q);  // [batch, 4, seq, seq]
#ifdef STAG_BAD
  auto p = softmax<-2>(scores, padding_keep(keep));
#else
  auto p = softmax<-1>(scores, padding_keep(keep));
#endif
  return sum<0, 1, 2, 3>(matmul(p, q));
});

int main() { return g.size() > 0 ? 0 : 1; }

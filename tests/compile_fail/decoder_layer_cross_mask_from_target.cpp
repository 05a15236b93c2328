// Mistake: building the cross-attention mask from the target's padding instead of the
// source's. Its key axis has the target length, the memory has the source length; the decoder
// layer checks its masks first and names itself and the mask.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::decoder_layer \(cross_keep\): the mask does not broadcast to \[batch, q_len, k_len\] of the inputs \(each dim equal or 1\): \[batch, 1, tgt_seq\] and \[batch, tgt_seq, src_seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::show::n<1>, stag::dims::tgt_seq>, stag::show::shape<stag::dims::batch, stag::dims::tgt_seq, stag::dims::src_seq>>>' "stag::decoder_layer \(cross_keep\): the mask does not broadcast to \[batch, q_len, k_len\] of the inputs \(each dim equal or 1\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto y = input<"y", Shape<batch, tgt_seq, 32>>(b);
  auto memory = input<"memory", Shape<batch, src_seq, 32>>(b);
  auto src_keep = input<"src_keep", Shape<batch, src_seq>, boolean>(b);
  auto tgt_keep = input<"tgt_keep", Shape<batch, tgt_seq>, boolean>(b);
  auto self_keep = padding_keep(tgt_keep) & causal_keep<tgt_seq>(b);
#ifdef STAG_BAD
  auto cross_keep = padding_keep(tgt_keep);
#else
  auto cross_keep = padding_keep(src_keep);
#endif
  return sum<0, 1, 2>(decoder_layer<4, 64>(b / "dec", y, memory, self_keep, cross_keep));
});

int main() { return g.size() > 0 ? 0 : 1; }

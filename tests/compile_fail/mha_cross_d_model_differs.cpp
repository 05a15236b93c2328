// Mistake: cross-attention from a decoder state of width 32 to an encoder memory of width 48
// (the memory was not projected). The layer names itself and shows both inputs.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: query and key/value inputs need the same d_model: \[batch, tgt_seq, 32\] and \[batch, src_seq, 48\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::tgt_seq, stag::show::n<32>>, stag::show::shape<stag::dims::batch, stag::dims::src_seq, stag::show::n<48>>>>' "stag::multi_head_attention: query and key/value inputs need the same d_model"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto y = input<"y", Shape<batch, tgt_seq, 32>>(b);
#ifdef STAG_BAD
  auto memory = input<"memory", Shape<batch, src_seq, 48>>(b);
#else
  auto memory = input<"memory", Shape<batch, src_seq, 32>>(b);
#endif
  return sum<0, 1, 2>(multi_head_attention<4>(b / "cross", y, memory, no_mask).out);
});

int main() { return g.size() > 0 ? 0 : 1; }

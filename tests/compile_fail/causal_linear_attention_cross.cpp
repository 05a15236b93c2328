// Mistake: the causal form of linear attention across two sequences (it is self-attention).
// expect-first-gcc: error: .*stag::shape_error<.*"stag::causal_linear_attention: queries and keys need the same sequence \(axis -2\); the causal form is self-attention: \[batch, tgt_seq, 8\] and \[batch, src_seq, 8\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'t', 'g', 't', '_', 's', 'e', 'q'>, stag::show::n<8>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'r', 'c', '_', 's', 'e', 'q'>, stag::show::n<8>>>>. "stag::causal_linear_attention: queries and keys need the same sequence \(axis -2\); the causal form is self-attention"
// expect-errors: 1
#include <stag/models/linear_attention.hpp>
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto src_seq = sym<"src_seq">;
constexpr auto tgt_seq = sym<"tgt_seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, tgt_seq, 8>>(b);
  auto k = input<"k", Shape<batch, src_seq, 8>>(b);
  auto v = input<"v", Shape<batch, src_seq, 4>>(b);
#ifdef STAG_BAD
  return sum<0, 1, 2>(causal_linear_attention(q, k, v));
#else
  return sum<0, 1, 2>(linear_attention(q, k, v));
#endif
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: a [batch, seq] padding mask used on [batch, heads, seq, seq] scores without
// unsqueezing it to [batch, 1, 1, seq] (PyTorch would broadcast it against the wrong dims).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::masked_fill: the mask.?'s rank differs from the input.?'s rank; unsqueeze it explicitly \(a \[B, S\] padding mask becomes \[B, 1, 1, S\] for \[B, H, S, S\] scores\): \[batch, 4, seq, seq\] and \[batch, seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::name<'s', 'e', 'q'>, stag::show::name<'s', 'e', 'q'>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>>>. "stag::masked_fill: the mask's rank differs from the input's rank; unsqueeze it explicitly \(a \[B, S\] padding mask becomes \[B, 1, 1, S\] for \[B, H, S, S\] scores\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto scores = input<"scores", Shape<batch, 4, seq, seq>>(b);
  auto pad = input<"pad", Shape<batch, seq>, boolean>(b);
#ifdef STAG_BAD
  auto filled = masked_fill(scores, pad, -1e9);
#else
  auto filled = masked_fill(scores, unsqueeze<1>(unsqueeze<1>(pad)), -1e9);
#endif
  return sum<0, 1, 2, 3>(softmax<-1>(filled));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: a [batch, seq] padding mask used on [batch, heads, seq, seq] scores. PyTorch's
// broadcasting would align it with the last two dims ([seq, seq] against [batch, seq]) and
// silently mask the wrong positions whenever batch == seq; stag wants [batch, 1, 1, seq].
// expect: stag::softmax: the mask and the scores differ in rank. unsqueeze it explicitly
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::softmax: the mask and the scores differ in rank. unsqueeze it explicitly \(a \[B, S\] padding mask becomes \[B, 1, 1, S\] for \[B, H, S, S\] scores\): \[batch, 4, seq, seq\] and \[batch, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::name<'s', 'e', 'q'>, stag::show::name<'s', 'e', 'q'>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>>>' "stag::softmax: the mask and the scores differ in rank. unsqueeze it explicitly \(a \[B, S\] padding mask becomes \[B, 1, 1, S\] for \[B, H, S, S\] scores\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 4, seq, 16>>(b);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
  auto scores = matmul_nt(q, q) * 0.25;
#ifdef STAG_BAD
  auto p = softmax<-1>(scores, keep);
#else
  auto p = softmax<-1>(scores, unsqueeze<1>(unsqueeze<1>(keep)));
#endif
  return sum<0, 1, 2, 3>(p);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: splitting d_model 500 into 8 heads (500 / 8 is not a whole number), as
// nn.MultiheadAttention(500, 8) would refuse at run time; stag refuses at compile time.
// expect: stag::multi_head_attention: d_model is not a multiple of the number of heads
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::multi_head_attention: d_model is not a multiple of the number of heads: \[batch, seq, 500\] and \[8\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<500>>, stag::show::shape<stag::show::n<8>>>>' "stag::multi_head_attention: d_model is not a multiple of the number of heads"
// expect-errors: 1
// clang-format on
#include <stag/models/attention.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto x = input<"x", Shape<batch, seq, 500>>(b);
#else
  auto x = input<"x", Shape<batch, seq, 512>>(b);
#endif
  return sum<0, 1, 2>(multi_head_attention<8>(b / "attn", x, x, no_mask).out);
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

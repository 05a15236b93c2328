// Mistake: splitting d_model 500 into 8 heads (500 / 8 is not a whole number), as
// nn.MultiheadAttention(500, 8) would refuse at run time; stag refuses at compile time.
// clang-format off
// expect: stag: a model dim does not split into the number of heads \(d_model must be a multiple of heads
// expect-gcc: required from here
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

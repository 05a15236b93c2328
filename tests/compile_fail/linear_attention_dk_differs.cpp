// Mistake: linear attention with queries of d_k 8 and keys of d_k 6.
// expect-first-gcc: error: .*stag::shape_error<.*"stag::linear_attention: q and k need the same last dim \(d_k\): \[batch, seq, 8\] and \[batch, seq, 6\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<8>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<6>>>>. "stag::linear_attention: q and k need the same last dim \(d_k\)"
// expect-errors: 1
#include <stag/models/linear_attention.hpp>
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, seq, 8>>(b);
#ifdef STAG_BAD
  auto k = input<"k", Shape<batch, seq, 6>>(b);
#else
  auto k = input<"k", Shape<batch, seq, 8>>(b);
#endif
  auto v = input<"v", Shape<batch, seq, 4>>(b);
  return sum<0, 1, 2>(linear_attention(q, k, v));
});

int main() { return g.size() > 0 ? 0 : 1; }

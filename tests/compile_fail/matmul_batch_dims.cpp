// Mistake: grouped-query attention without repeating the key heads: q has 8 heads, k has 2,
// so the batch dims [batch, 8] and [batch, 2] of q @ k^T do not broadcast.
// expect: stag::matmul: batch dimensions \(all but the last two\) are not broadcastable
// expect-gcc: SA = stag::Shape<stag::Sym<stag::fixed_string<6>\{"batch"\}>\(\), 8, stag::Sym<stag::fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: SB = stag::Shape<stag::Sym<stag::fixed_string<6>\{"batch"\}>\(\), 2, stag::Sym<stag::fixed_string<4>\{"seq"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 8, seq, 64>>(b);
#ifdef STAG_BAD
  auto k = input<"k", Shape<batch, 2, seq, 64>>(b);
#else
  auto k = expand<batch, 8, seq, 64>(input<"k", Shape<batch, 1, seq, 64>>(b));
#endif
  return sum<0, 1, 2, 3>(matmul_nt(q, k));
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: adding the encoder memory [batch, src, 64] to the decoder stream [batch, tgt, 64].
// Even when src and tgt are bound to the same length, the symbols differ by name.
// expect: stag::add: shapes are not broadcastable \(numpy rules; symbols match by name\)
// expect-gcc: SA = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"tgt"\}>\(\), 64>
// expect-gcc: SB = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"src"\}>\(\), 64>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto src = sym<"src">;
constexpr auto tgt = sym<"tgt">;

constexpr auto g = model([](Builder& b) {
  auto y = input<"y", Shape<batch, tgt, 64>>(b);
  auto memory = input<"memory", Shape<batch, src, 64>>(b);
#ifdef STAG_BAD
  auto h = y + memory;
#else
  auto h = y + matmul(softmax<-1>(matmul_nt(y, memory)), memory);  // cross-attention
#endif
  return sum<0, 1, 2>(h);
});

int main() { return g.size() > 0 ? 0 : 1; }

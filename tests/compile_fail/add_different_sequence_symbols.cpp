// Mistake: adding the encoder memory [batch, src, 64] to the decoder stream [batch, tgt, 64].
// Even when src and tgt are bound to the same length, the symbols differ by name.
// expect: stag::add: shapes are not broadcastable \(numpy rules; symbols match by name\)
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\): \[batch, tgt, 64\] and \[batch, src, 64\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'t', 'g', 't'>, stag::show::n<64>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'r', 'c'>, stag::show::n<64>>>>' "stag::add: shapes are not broadcastable \(numpy rules. symbols match by name\)"
// expect-errors: 1
// clang-format on
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

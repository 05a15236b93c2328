// Mistake: rope on heads of dim 63 (rope rotates pairs (i, i + Dh/2): Dh must be even).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::rope: the last dim \(head dim Dh\) must be even: rope rotates pairs \(i, i \+ Dh/2\): \[batch, 4, seq, 63\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::name<'s', 'e', 'q'>, stag::show::n<63>>>>. "stag::rope: the last dim \(head dim Dh\) must be even: rope rotates pairs \(i, i \+ Dh/2\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto q = input<"q", Shape<batch, 4, seq, 63>>(b);
#else
  auto q = input<"q", Shape<batch, 4, seq, 64>>(b);
#endif
  return sum<0, 1, 2, 3>(rope(q));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

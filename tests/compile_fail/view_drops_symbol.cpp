// Mistake: viewing [batch, seq, 512] as [seq, 512]: the batch dim disappears (in PyTorch this
// only fails at run time, and silently works when batch == 1).
// expect: stag::view: the target drops or adds a symbolic dim \(each symbol must be kept\)
// expect-gcc: Ds = \{Sym<fixed_string<4>\{"seq"\}>\(\), 512\}
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\), 512>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 512>>(b);
#ifdef STAG_BAD
  auto y = view<seq, 512>(x);
#else
  auto y = view<batch * seq, 512>(x);
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: viewing [batch, seq, 512] as [seq, 512]: the batch dim disappears (in PyTorch this
// only fails at run time, and silently works when batch == 1).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the target drops or adds a symbolic dim \(each symbol must be kept\): \[batch, seq, 512\] and \[seq, 512\]"
// expect-first-clang: error: static_assert failed due to requirement .*shape_check<false, stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>, stag::show::n<512>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<512>>>>. \"stag::view: the target drops or adds a symbolic dim
// expect-errors: 1
// clang-format on
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

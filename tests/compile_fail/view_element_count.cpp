// Mistake: flattening [batch, seq, 512] to [batch * seq, 256]: half the elements are missing.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the element counts differ \(input shape, target shape\): \[batch, seq, 512\] and \[batch\*seq, 256\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::shape<stag::show::prod<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>, stag::show::n<256>>>>. \"stag::view: the element counts differ
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 512>>(b);
#ifdef STAG_BAD
  auto flat = view<batch * seq, 256>(x);
#else
  auto flat = view<batch * seq, 512>(x);
#endif
  return sum<0, 1>(flat);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: passing a 0/1 float mask as where's condition (it must be bool: compare or cast).
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::where: the condition must be a bool tensor \(compare or cast first\): \[seq, 8\] and \[seq, 8\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<8>>, stag::show::shape<stag::show::name<'s', 'e', 'q'>, stag::show::n<8>>>>. "stag::where: the condition must be a bool tensor \(compare or cast first\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<seq, 8>>(b);
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<seq, 8>>(b);
#else
  auto keep = input<"keep", Shape<seq, 8>, boolean>(b);
#endif
  return sum<0, 1>(where(keep, x, 0.0));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

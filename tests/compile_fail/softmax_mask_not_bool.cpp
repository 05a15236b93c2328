// Mistake: a 0/1 float mask passed where softmax takes a bool keep-mask.
// expect-first-gcc: error: .*stag::shape_error<.*"stag::softmax: the mask must be a bool tensor: \[batch, 4, seq, seq\] and \[batch, 1, 1, seq\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<4>, stag::show::name<'s', 'e', 'q'>, stag::show::name<'s', 'e', 'q'>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<1>, stag::show::n<1>, stag::show::name<'s', 'e', 'q'>>>>. "stag::softmax: the mask must be a bool tensor"
// expect-errors: 1
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto scores = input<"scores", Shape<batch, 4, seq, seq>>(b);
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<batch, 1, 1, seq>>(b);
#else
  auto keep = input<"keep", Shape<batch, 1, 1, seq>, boolean>(b);
#endif
  return sum<0, 1, 2, 3>(softmax<-1>(scores, keep));
});

int main() { return g.size() > 0 ? 0 : 1; }

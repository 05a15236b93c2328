// Mistake: labels [batch] for per-token logits [batch, seq, 10] (sequence-level labels given to
// a token-level loss); the labels must be the logits' leading dims [batch, seq].
// clang-format off
// expect: stag::cross_entropy: the labels..? shape must be the logits..? shape without its last
// expect-gcc: SL = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), (stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\), 10>
// expect-gcc: SY = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\)>;
// expect-gcc: required from here
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::cross_entropy: the labels.. shape must be the logits.. shape without its last \(class\) dim: logits \[B, S, C\] take labels \[B, S\]: \[batch, seq, 10\] and \[batch\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement .::stag::shape_check<false, stag::show::args<stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>, stag::show::name<.s., .e., .q.>, stag::show::n<10>>, stag::show::shape<stag::show::name<.b., .a., .t., .c., .h.>>>>. .stag::cross_entropy: the labels. shape must be the logits. shape without its last \(class\) dim: logits \[B, S, C\] take labels \[B, S\].
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto logits = input<"logits", Shape<batch, seq, 10>>(b);
#ifdef STAG_BAD
  auto labels = input<"labels", Shape<batch>, i32>(b);
#else
  auto labels = input<"labels", Shape<batch, seq>, i32>(b);
#endif
  return cross_entropy(logits, labels);
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

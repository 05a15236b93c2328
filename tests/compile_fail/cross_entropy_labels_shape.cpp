// Mistake: labels [batch] for per-token logits [batch, seq, 10] (sequence-level labels given to
// a token-level loss); the labels must be the logits' leading dims [batch, seq].
// clang-format off
// expect: stag::cross_entropy: the labels' shape must be the logits' shape without its last
// expect-gcc: SL = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), (stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\), 10>
// expect-gcc: SY = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\)>;
// expect-gcc: required from here
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

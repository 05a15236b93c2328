// Mistake: predictions [batch] against targets [batch, 1]; PyTorch broadcasts them to
// [batch, batch] (with only a warning) and trains on the wrong loss.
// clang-format off
// expect: stag::mse_loss: pred and target must have the same shape
// expect-gcc: SP = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\)>;
// expect-gcc: ST = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), 1>;
// expect-gcc: required from here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto pred = input<"pred", Shape<batch>>(b);
#ifdef STAG_BAD
  auto target = input<"target", Shape<batch, 1>>(b);
#else
  auto target = input<"target", Shape<batch>>(b);
#endif
  return mse_loss(pred, target);
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

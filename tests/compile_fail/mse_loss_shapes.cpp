// Mistake: predictions [batch] against targets [batch, 1]; PyTorch broadcasts them to
// [batch, batch] (with only a warning) and trains on the wrong loss.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::mse_loss: pred and target must have the same shape \(no broadcasting\); view or squeeze one of them: \[batch\] and \[batch, 1\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>>, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<1>>>>. "stag::mse_loss: pred and target must have the same shape \(no broadcasting\); view or squeeze one of them"
// expect-errors: 1
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

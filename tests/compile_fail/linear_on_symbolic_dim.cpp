// Mistake: pooling over the feature axis instead of the sequence ([batch, seq, 32] -> mean over
// the last axis -> [batch, seq]) and classifying that: linear<2> would create a weight
// [2, seq] that trains at one length and fails at another. Parameters have static shapes.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::linear: a parameter would have a symbolic dim \(weight \[out_features, in_features\] from the last dim of the input\). linear needs static features: \[batch, seq\] and \[2, seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::shape<stag::dims::batch, stag::dims::seq>, stag::show::shape<stag::show::n<2>, stag::dims::seq>>>' "stag::linear: a parameter would have a symbolic dim \(weight \[out_features, in_features\] from the last dim of the input\). linear needs static features"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 32>>(b);
#ifdef STAG_BAD
  auto pooled = mean<-1>(x);
#else
  auto pooled = mean<1>(x);
#endif
  return sum<0, 1>(linear<2>(b / "head", pooled));
});

int main() { return g.size() > 0 ? 0 : 1; }

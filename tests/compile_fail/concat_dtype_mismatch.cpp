// Mistake: concatenating float features with integer ids along the feature axis (no implicit
// cast: cast<f32>(ids) first). The error shows both inputs with their dtypes.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::concat: all inputs must have the same dtype: f32 \[batch, seq, 4\] and i32 \[batch, seq, 1\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::f32, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<4>>>, stag::show::typed<stag::DType::i32, stag::show::shape<stag::dims::batch, stag::dims::seq, stag::show::n<1>>>>>' "stag::concat: all inputs must have the same dtype"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 4>>(b);
#ifdef STAG_BAD
  auto ids = input<"ids", Shape<batch, seq, 1>, DType::i32>(b);
#else
  auto ids = cast<DType::f32>(input<"ids", Shape<batch, seq, 1>, DType::i32>(b));
#endif
  return sum<0, 1, 2>(concat<-1>(x, ids));
});

int main() { return g.size() > 0 ? 0 : 1; }

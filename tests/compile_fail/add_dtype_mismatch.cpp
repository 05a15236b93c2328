// Mistake: adding integer positions [seq] (i32) to float activations [batch, seq] without a cast.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::add: operands must have the same numeric dtype \(no implicit casts\): f32 \[batch, seq\] and i32 \[seq\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::f32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>>, stag::show::typed<stag::DType::i32, stag::show::shape<stag::show::name<'s', 'e', 'q'>>>>>' "stag::add: operands must have the same numeric dtype \(no implicit casts\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq>>(b);
#ifdef STAG_BAD
  auto y = x + positions<seq>(b);
#else
  auto y = x + cast<f32>(positions<seq>(b));
#endif
  return sum<0, 1>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }

// Mistake: clamp of integer ids (clamp is float only; cast first or clamp the float values).
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::clamp: input must be f32 or f64; for an integer tensor write cast<f32>\(x\) first: i32 \[batch, 8\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::i32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<8>>>, void>>' "stag::clamp: input must be f32 or f64; for an integer tensor write cast<f32>\(x\) first"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto ids = input<"ids", Shape<batch, 8>, i32>(b);
#ifdef STAG_BAD
  auto c = cast<f32>(clamp(ids, 0, 7));
#else
  auto c = clamp(cast<f32>(ids), 0, 7);
#endif
  return sum<0, 1>(c);
});

int main() { return g.size() > 0 ? 0 : 1; }

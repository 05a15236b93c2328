// Mistake: argmax of a bool mask (PyTorch refuses it too): cast it to i32 or f32 first.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::argmax: input must be f32, f64, i32 or i64 \(cast a bool mask first\): bool \[batch, 9\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::boolean, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<9>>>, void>>' "stag::argmax: input must be f32, f64, i32 or i64 \(cast a bool mask first\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<batch, 9>, boolean>(b);
#else
  auto keep = input<"keep", Shape<batch, 9>, i32>(b);
#endif
  return sum<0>(cast<f32>(argmax<-1>(keep)));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

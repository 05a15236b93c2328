// Mistake: float labels (one-hot-style or read from a float column); cross_entropy takes i32
// or i64 class indices.
// clang-format off
// expect-first-gcc: error: invalid application of 'sizeof' to incomplete type 'stag::shape_error<stag::detail::message<[0-9]+>\{"stag::cross_entropy: labels must be i32 or i64 class indices \(for soft targets, write -sum\(target \* log_softmax\(logits\)\)\): f32 \[batch, 3\] and f32 \[batch\]"\}>'
// expect-first-clang: error: static_assert failed due to requirement '::stag::shape_check<false, stag::show::args<stag::show::typed<stag::DType::f32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::n<3>>>, stag::show::typed<stag::DType::f32, stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>>>>>' "stag::cross_entropy: labels must be i32 or i64 class indices \(for soft targets, write -sum\(target \* log_softmax\(logits\)\)\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto logits = input<"logits", Shape<batch, 3>>(b);
#ifdef STAG_BAD
  auto labels = input<"labels", Shape<batch>, f32>(b);
#else
  auto labels = input<"labels", Shape<batch>, i64>(b);
#endif
  return cross_entropy(logits, labels);
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

// Mistake: token ids fed as f32 (as they come out of a float data pipeline); embedding needs
// i32 or i64 ids.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::embedding: ids must be i32 or i64 \(cast float ids with cast<i32>\): \[batch, seq\] and \[100, 16\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::name<'b', 'a', 't', 'c', 'h'>, stag::show::name<'s', 'e', 'q'>>, stag::show::shape<stag::show::n<100>, stag::show::n<16>>>>. "stag::embedding: ids must be i32 or i64 \(cast float ids with cast<i32>\)"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
#ifdef STAG_BAD
  auto ids = input<"ids", Shape<batch, seq>, f32>(b);
#else
  auto ids = input<"ids", Shape<batch, seq>, i32>(b);
#endif
  auto table = param<Shape<100, 16>>(b / "tok", "weight", kEmbeddingInit);
  return sum<0, 1, 2>(embedding(ids, table));
});

int main() {
  return g.size() > 0 ? 0 : 1;
}

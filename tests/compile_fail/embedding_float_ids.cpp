// Mistake: token ids fed as f32 (as they come out of a float data pipeline); embedding needs
// i32 or i64 ids.
// clang-format off
// expect: stag::embedding: ids must be i32 or i64
// expect-gcc: SI = (stag::)?Shape<(stag::)?Sym<(stag::)?fixed_string<6>\{"batch"\}>\(\), (stag::)?Sym<(stag::)?fixed_string<4>\{"seq"\}>\(\)>; (stag::)?DType TI = stag::DType::f32
// expect-gcc: required from here
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

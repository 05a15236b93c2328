// positions (arange): 0..n-1 along a symbolic or static dim, with a start offset, bound to
// several lengths; as the key of a padding mask; and in a loss (it takes no gradient).
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

static_assert(
    std::is_same_v<decltype(positions<seq>(std::declval<Builder&>())), Tensor<Shape<seq>, i32>>);
static_assert(
    std::is_same_v<decltype(positions<7>(std::declval<Builder&>(), 3)), Tensor<Shape<7>, i32>>);

constexpr auto aranges = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq>>(g);
  auto lengths = input<"lengths", Shape<batch, 1>, i32>(g);
  auto pos = positions<seq>(g).named("pos");
  positions<7>(g, 3).named("from3");
  positions<seq>(g, -2).named("from_minus2");
  lt(pos, lengths).named("keep");  // [seq] < [batch, 1] -> [batch, seq]: the padding mask
  return sum<0, 1>(x);
});

TEST_CASE("positions count from the start along the bound dim", "[op][positions]") {
  for (std::int64_t s : {5, 1, 13}) {
    INFO("seq " << s);
    const Evaluation e = evaluate_reference(
        aranges,
        {{"x", Array(DType::f32, {2, s})}, {"lengths", Array::from<std::int32_t>({2, 1}, {3, 0})}},
        {});
    std::vector<double> pos, minus2, keep;
    for (std::int64_t i = 0; i < s; ++i) pos.push_back(static_cast<double>(i));
    for (std::int64_t i = 0; i < s; ++i) minus2.push_back(static_cast<double>(i - 2));
    for (std::int64_t len : {3, 0})
      for (std::int64_t i = 0; i < s; ++i) keep.push_back(i < len ? 1 : 0);
    th::require_close(e["pos"], pos, 0);
    CHECK(e["pos"].dtype() == DType::i32);
    th::require_close(e["from3"], {3, 4, 5, 6, 7, 8, 9}, 0);
    th::require_close(e["from_minus2"], minus2, 0);
    th::require_close(e["keep"], keep, 0);
    CHECK(e["keep"].dims() == std::vector<std::int64_t>{2, s});
  }
}

// Position-weighted loss: x's gradient is its position (plus the weights), positions none.
constexpr auto pos_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq>>(g);
  auto w = input<"w", Shape<batch, seq>>(g);
  return sum<0, 1>(x * cast<f32>(positions<seq>(g, 1)) + x * x * w);
});
constexpr auto pos_train = grad<pos_loss, "x">();

TEST_CASE("positions in a loss on several bindings", "[op][positions][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {1, 13}, {11, 1}};
  th::check_op({.what = "positions",
                .forward = pos_loss,
                .train = pos_train,
                .inputs =
                    [&](int k) {
                      auto [b, s] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {b, s}, 10 + k)},
                                         {"w", th::random_array(DType::f32, {b, s}, 20 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

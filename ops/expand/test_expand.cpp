// expand (broadcast_to): result types (the attention mask form, added leading dims, a []
// scalar), values checked by index formulas for f32 and bool under several bindings, and
// gradients (summed back over the expanded dims).
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int H = 3;

static_assert(std::is_same_v<decltype(expand<batch, H, seq, seq>(
                                 std::declval<Tensor<Shape<batch, 1, 1, seq>, boolean>>())),
                             Tensor<Shape<batch, H, seq, seq>, boolean>>);
static_assert(std::is_same_v<decltype(expand<2, 5, 7>(std::declval<Tensor<Shape<7>>>())),
                             Tensor<Shape<2, 5, 7>>>);
static_assert(
    std::is_same_v<decltype(expand<5, 7>(std::declval<Tensor<Shape<>>>())), Tensor<Shape<5, 7>>>);
static_assert(
    std::is_same_v<decltype(expand<batch, seq>(std::declval<Tensor<Shape<batch, seq>>>())),
                   Tensor<Shape<batch, seq>>>);

constexpr auto grow = model([](Builder& g) {
  auto row = input<"row", Shape<1, seq>>(g);
  auto col = input<"col", Shape<batch, 1>>(g);
  auto keep = input<"keep", Shape<batch, 1, 1, seq>, boolean>(g);
  auto s = input<"s", Shape<>>(g);
  expand<batch, seq>(row).named("rows");
  expand<2, batch, seq>(col).named("cols");
  expand<batch, H, seq, seq>(keep).named("mask");
  expand<5, 7>(s).named("filled");
  return sum<0, 1>(expand<batch, seq>(row));
});

TEST_CASE("expand repeats size-1 and leading dims, several bindings", "[op][expand]") {
  for (auto [b, sq] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {1, 11}, {13, 1}}) {
    INFO("batch " << b << ", seq " << sq);
    const Array row = th::random_array(DType::f32, {1, sq}, 1);
    const Array col = th::random_array(DType::f32, {b, 1}, 2);
    const Array keep = th::random_array(DType::boolean, {b, 1, 1, sq}, 3);
    const Evaluation e = evaluate_reference(
        grow, {{"row", row}, {"col", col}, {"keep", keep}, {"s", Array::from<float>({}, {-4})}},
        {});
    std::vector<double> rows, cols, mask;
    for (std::int64_t i = 0; i < b; ++i)
      for (std::int64_t j = 0; j < sq; ++j) rows.push_back(row.at(j));
    for (int r = 0; r < 2; ++r)
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t j = 0; j < sq; ++j) cols.push_back(col.at(i));
    for (std::int64_t i = 0; i < b; ++i)
      for (int h = 0; h < H; ++h)
        for (std::int64_t q = 0; q < sq; ++q)
          for (std::int64_t k = 0; k < sq; ++k) mask.push_back(keep.at(i * sq + k));
    th::require_close(e["rows"], rows, 0);
    th::require_close(e["cols"], cols, 0);
    th::require_close(e["mask"], mask, 0);
    th::require_close(e["filled"], std::vector<double>(35, -4.0), 0);
    CHECK(e["mask"].dims() == std::vector<std::int64_t>{b, H, sq, sq});
    CHECK(e["mask"].dtype() == DType::boolean);
    CHECK(e["cols"].dims() == std::vector<std::int64_t>{2, b, sq});
  }
}

constexpr auto expand_loss = model([](Builder& g) {
  auto row = input<"row", Shape<1, seq>>(g);
  auto col = input<"col", Shape<batch, 1>>(g);
  auto s = input<"s", Shape<>>(g);
  auto w = input<"w", Shape<2, batch, seq>>(g);
  return sum<0, 1, 2>(
      (expand<2, batch, seq>(row) + expand<2, batch, seq>(col) * expand<2, batch, seq>(s)) * w);
});
constexpr auto expand_train = grad<expand_loss, "row", "col", "s">();

TEST_CASE("expand on odd shapes and several bindings", "[op][expand][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {1, 11}, {13, 1}};
  th::check_op({.what = "expand",
                .forward = expand_loss,
                .train = expand_train,
                .inputs =
                    [&](int k) {
                      auto [b, s] = dims[k];
                      return NamedArrays{{"row", th::random_array(DType::f32, {1, s}, 10 + k)},
                                         {"col", th::random_array(DType::f32, {b, 1}, 20 + k)},
                                         {"s", th::random_array(DType::f32, {}, 30 + k)},
                                         {"w", th::random_array(DType::f32, {2, b, s}, 40 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

// numel: the element count over chosen axes as a [] float, from the bound symbols (x's data
// is never read), in f32 and f64; it passes no gradient to x, which the harness checks.
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

// numel has no typed front-end: graph passes (mean's VJP) build it from Refs.
template <class X>
constexpr auto count(X x, std::uint32_t mask, DType t = DType::f32) {
  return Tensor<Shape<>>{x.b, numel(x.ref(), mask, t).id};
}

constexpr auto counts = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols, 3>>(g);
  auto ids = input<"ids", Shape<rows>, i32>(g);
  count(x, 0b001).named("n_rows");
  count(x, 0b110).named("n_cols3");
  count(x, 0b111).named("n_all");
  count(x, 0).named("n_none");
  count(ids, 0b1).named("n_ids");
  Tensor<Shape<>, f64>{&g, numel(x.ref(), 0b011, DType::f64).id}.named("n_f64");
  return sum<0, 1, 2>(x);
});
static_assert(counts.shape(counts.find("n_all")) == Shape<>::value);

TEST_CASE("numel counts the bound dims of the chosen axes", "[op][numel]") {
  for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {13, 1}, {1, 11}}) {
    INFO("rows " << r << ", cols " << c);
    // x holds NaNs: numel must not read the data.
    Array x(DType::f32, {r, c, 3});
    for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, std::nan(""));
    const Evaluation e =
        evaluate_reference(counts, {{"x", x}, {"ids", Array(DType::i32, {r})}}, {});
    th::require_close(e["n_rows"], {static_cast<double>(r)}, 0);
    th::require_close(e["n_cols3"], {static_cast<double>(c * 3)}, 0);
    th::require_close(e["n_all"], {static_cast<double>(r * c * 3)}, 0);
    th::require_close(e["n_none"], {1}, 0);
    th::require_close(e["n_ids"], {static_cast<double>(r)}, 0);
    th::require_close(e["n_f64"], {static_cast<double>(r * c)}, 0);
    CHECK(e["n_f64"].dtype() == DType::f64);
    CHECK(e["n_all"].dims().empty());
  }
}

// A loss divided by a count: x's gradient is w / (rows * cols) only, numel adds nothing.
constexpr auto numel_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols>>(g);
  auto w = input<"w", Shape<rows, cols>>(g);
  return sum<0, 1>(x * w) / count(x, 0b11) + sum<0, 1>(x * x) / count(x, 0b01);
});
constexpr auto numel_train = grad<numel_loss, "x">();

TEST_CASE("numel on several bindings passes no gradient", "[op][numel][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {13, 1}, {1, 11}};
  th::check_op({.what = "numel",
                .forward = numel_loss,
                .train = numel_train,
                .inputs =
                    [&](int k) {
                      auto [r, c] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, c}, 10 + k)},
                                         {"w", th::random_array(DType::f32, {r, c}, 20 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

// argmax: first index on ties, NaN wins, keepdim, integer inputs, a scalar result, odd shapes
// and symbolic dims against an independent scan, and the empty-axis error.
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;

static_assert(std::is_same_v<decltype(argmax<-1>(std::declval<Tensor<Shape<rows, 7>>>())),
                             Tensor<Shape<rows>, i32>>);
static_assert(std::is_same_v<decltype(argmax<0>(std::declval<Tensor<Shape<rows, 7>>>(), keepdim)),
                             Tensor<Shape<1, 7>, i32>>);
static_assert(std::is_same_v<decltype(argmax<0>(std::declval<Tensor<Shape<len>, i64>>())),
                             Tensor<Shape<>, i32>>);

constexpr auto last = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  return argmax<-1>(x).named("y");
});
constexpr auto middle = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 7, len>, i32>(g);
  return argmax<1>(x, keepdim).named("y");
});
constexpr auto vec_graph = model([](Builder& g) {
  auto x = input<"x", Shape<len>>(g);
  return argmax<0>(x).named("y");
});

TEST_CASE("argmax picks the first maximum, hand-computed", "[op][argmax]") {
  const NamedArrays in{{"x", Array::from<float>({3, 5}, {1, 3, 3, 2, 0,       // tie: first
                                                         -1, -5, -1, -7, -2,  // tie at 0
                                                         0, 0, 0, 0, 9})}};
  const Evaluation e = evaluate_reference(last, in, {});
  CHECK(e["y"].dtype() == DType::i32);
  th::require_close(e["y"], {1, 0, 4}, 0);
}

TEST_CASE("argmax treats NaN as the largest value", "[op][argmax]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const NamedArrays in{{"x", Array::from<float>({2, 4}, {1, nan, 5, nan, inf, 2, 3, -inf})}};
  th::require_close(evaluate_reference(last, in, {})["y"], {1, 0}, 0);
}

TEST_CASE("argmax of a vector is a scalar", "[op][argmax]") {
  const Evaluation e =
      evaluate_reference(vec_graph, {{"x", Array::from<float>({5}, {2, 7, -1, 7, 3})}}, {});
  CHECK(e["y"].rank() == 0);
  th::require_close(e["y"], {1}, 0);
}

// The first index of the maximum of x[r, :, c] of a [R, K, C] array, by a plain scan.
std::vector<double> expected_argmax_mid(const Array& x) {
  const std::int64_t R = x.dim(0), K = x.dim(1), C = x.dim(2);
  std::vector<double> out;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < K; ++k)
        if (x.at((r * K + k) * C + c) > x.at((r * K + best) * C + c)) best = k;
      out.push_back(static_cast<double>(best));
    }
  return out;
}

TEST_CASE("argmax on odd shapes, integer input with ties, several bindings", "[op][argmax]") {
  for (auto [r, l] : {std::pair{5, 11}, std::pair{13, 1}, std::pair{7, 5}}) {
    // Values in [-3, 3): many ties along the 7 entries, so the first-index rule is exercised.
    const Array x =
        th::random_array(DType::i32, {r, 7, l}, 10 + static_cast<std::uint64_t>(r), -3, 3);
    const Evaluation e = evaluate_reference(middle, {{"x", x}}, {});
    CHECK(e["y"].dims() == std::vector<std::int64_t>{r, 1, l});
    th::require_close(e["y"], expected_argmax_mid(x), 0);
  }
}

constexpr auto argmax_graph = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  return sum<0>(cast<f32>(argmax<1>(x)) * sum<1>(x));
});

TEST_CASE("argmax agrees in f32 and f64", "[op][argmax]") {
  th::check_op({.what = "argmax",
                .forward = argmax_graph,
                .train = {},
                .inputs =
                    [](int k) {
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {5 + 6 * k, 13 - 2 * k}, 3 + k)}};
                    },
                .bindings = 2});
}

TEST_CASE("argmax over an empty axis is refused", "[op][argmax]") {
  try {
    evaluate_reference(last, {{"x", Array(DType::f32, {3, 0})}}, {});
    FAIL("no error");
  } catch (const stag::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("y: argmax over dim 1, which is empty") != std::string::npos);
  }
}

}  // namespace

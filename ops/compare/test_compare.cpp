// lt, le, eq: bool results with broadcasting both ways against formulas in the test (values
// with many ties, so < and <= differ), NaN, i64 beyond 2^53, bool operands, several bindings,
// and a loss masked by comparisons (no gradient flows through them).
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

static_assert(std::is_same_v<decltype(lt(std::declval<Tensor<Shape<rows, 1>, i32>>(),
                                         std::declval<Tensor<Shape<cols>, i32>>())),
                             Tensor<Shape<rows, cols>, boolean>>);
static_assert(std::is_same_v<decltype(eq(std::declval<Tensor<Shape<>, boolean>>(),
                                         std::declval<Tensor<Shape<5>, boolean>>())),
                             Tensor<Shape<5>, boolean>>);

constexpr auto cmps = model([](Builder& g) {
  auto a = input<"a", Shape<rows, cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  lt(a, b).named("a_lt_b");
  le(b, a).named("b_le_a");
  eq(a, c).named("a_eq_c");
  lt(c, b).named("c_lt_b");
  return sum<0, 1>(a);
});

// Whole numbers in [-3, 3): comparisons with plenty of ties.
Array ties(std::vector<std::int64_t> dims, std::uint64_t seed) {
  Array a = th::random_array(DType::f32, std::move(dims), seed, -3, 3);
  for (std::int64_t i = 0; i < a.numel(); ++i) a.set(i, std::floor(a.at(i)));
  return a;
}

TEST_CASE("comparisons broadcast both ways, several bindings", "[op][compare]") {
  for (auto [r, n] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {13, 1}, {1, 11}}) {
    INFO("rows " << r << ", cols " << n);
    const Array a = ties({r, n}, 1), b = ties({n}, 2), c = ties({r, 1}, 3);
    const Evaluation e = evaluate_reference(cmps, {{"a", a}, {"b", b}, {"c", c}}, {});
    std::vector<double> lt_ab, le_ba, eq_ac, lt_cb;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double av = a.at(i * n + j), bv = b.at(j), cv = c.at(i);
        lt_ab.push_back(av < bv);
        le_ba.push_back(bv <= av);
        eq_ac.push_back(av == cv);
        lt_cb.push_back(cv < bv);
      }
    th::require_close(e["a_lt_b"], lt_ab, 0);
    th::require_close(e["b_le_a"], le_ba, 0);
    th::require_close(e["a_eq_c"], eq_ac, 0);
    th::require_close(e["c_lt_b"], lt_cb, 0);
    CHECK(e["a_lt_b"].dtype() == DType::boolean);
    CHECK(e["c_lt_b"].dims() == std::vector<std::int64_t>{r, n});
  }
}

TEST_CASE("comparisons by hand, with NaN", "[op][compare]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Evaluation e = evaluate_reference(cmps,
                                          {{"a", Array::from<float>({2, 3}, {1, 2, 3, nan, 5, 6})},
                                           {"b", Array::from<float>({3}, {2, 2, nan})},
                                           {"c", Array::from<float>({2, 1}, {3, nan})}},
                                          {});
  th::require_close(e["a_lt_b"], {1, 0, 0, 0, 0, 0}, 0);
  th::require_close(e["b_le_a"], {0, 1, 0, 0, 1, 0}, 0);
  th::require_close(e["a_eq_c"], {0, 0, 1, 0, 0, 0}, 0);  // NaN equals nothing, itself included
  th::require_close(e["c_lt_b"], {0, 0, 0, 0, 0, 0}, 0);
}

constexpr auto exact = model([](Builder& g) {
  auto l = input<"l", Shape<rows>, i64>(g);
  auto m = input<"m", Shape<rows>, i64>(g);
  auto k = input<"k", Shape<rows>, boolean>(g);
  auto i = input<"i", Shape<rows>, i32>(g);
  lt(l, m).named("lt");
  le(m, l).named("le");
  eq(l, m).named("eq");
  eq(k, unsqueeze<0>(k)).named("k_eq");  // [rows] vs [1, rows] -> [1, rows]
  return lt(i, i).named("never");
});

TEST_CASE("i64 comparisons are exact beyond 2^53; bools and ints compare", "[op][compare]") {
  const std::int64_t big = std::int64_t{1} << 53;  // big + 1 is not a double
  const NamedArrays in{{"l", Array::from<std::int64_t>({3}, {big, big + 1, -big - 1})},
                       {"m", Array::from<std::int64_t>({3}, {big + 1, big + 1, -big})},
                       {"k", Array::from<bool>({3}, {true, false, true})},
                       {"i", Array::from<std::int32_t>({3}, {1, -2, 3})}};
  const Evaluation e = evaluate_reference(exact, in, {});
  th::require_close(e["lt"], {1, 0, 1}, 0);
  th::require_close(e["le"], {0, 1, 0}, 0);
  th::require_close(e["eq"], {0, 1, 0}, 0);
  th::require_close(e["k_eq"], {1, 1, 1}, 0);
  th::require_close(e["never"], {0, 0, 0}, 0);
}

// Comparisons select which terms count; their inputs get no gradient through them.
constexpr auto cmp_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols>>(g);
  auto y = input<"y", Shape<cols>>(g);
  return sum<0, 1>(x * x * cast<f32>(lt(x, y))) + sum<0, 1>(x * y * cast<f32>(le(y, x))) +
         sum<0, 1>(x * cast<f32>(eq(x, x)));
});
constexpr auto cmp_train = grad<cmp_loss, "x", "y">();

TEST_CASE("comparisons in a loss on several bindings", "[op][compare][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {13, 1}, {1, 11}};
  th::check_op({.what = "lt, le, eq",
                .forward = cmp_loss,
                .train = cmp_train,
                .inputs =
                    [&](int k) {
                      auto [r, n] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, n}, 10 + k)},
                                         {"y", th::random_array(DType::f32, {n}, 20 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

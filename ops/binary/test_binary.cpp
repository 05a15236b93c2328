// add, sub, mul, div and the tensor-scalar operators: values against formulas evaluated in the
// test, broadcasting both ways, integer semantics, symbolic dims bound to several values, and
// gradients of both operands (through sum_to) in the op harness. Add a case per new rule.
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

template <class A, class B>
using add_t = decltype(std::declval<A>() + std::declval<B>());

// Broadcasting shows in the result type; symbols keep their names.
static_assert(std::is_same_v<add_t<Tensor<Shape<5, 1>>, Tensor<Shape<1, 7>>>, Tensor<Shape<5, 7>>>);
static_assert(std::is_same_v<add_t<Tensor<Shape<rows, cols>>, Tensor<Shape<cols>>>,
                             Tensor<Shape<rows, cols>>>);
static_assert(std::is_same_v<decltype(std::declval<Tensor<Shape<rows, 1, cols>>>() *
                                      std::declval<Tensor<Shape<rows, cols, 1>>>()),
                             Tensor<Shape<rows, cols, cols>>>);
static_assert(std::is_same_v<add_t<Tensor<Shape<>>, Tensor<Shape<>>>, Tensor<Shape<>>>);
static_assert(std::is_same_v<decltype(std::declval<Tensor<Shape<rows>, i32>>() * 2.0),
                             Tensor<Shape<rows>, i32>>);

// Every operand pairing: [r, c] with [c] (row broadcast), with [r, 1] (column broadcast), the
// outer form [c] x [r, 1], a [] scalar, and the scalar operators on both sides.
constexpr auto arith = model([](Builder& g) {
  auto a = input<"a", Shape<rows, cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  auto s = input<"s", Shape<>>(g);
  (a + b).named("a_plus_b");
  (c - a).named("c_minus_a");
  (b * c).named("b_times_c");
  (a / c).named("a_over_c");
  (b / a).named("b_over_a");
  (a * s).named("a_times_s");
  (s - s).named("s_minus_s");
  (a + 2.5).named("a_plus_2.5");
  (2.5 - a).named("2.5_minus_a");
  (a * -3.0).named("a_times_-3");
  (4.0 * b).named("4_times_b");
  (a / 4.0).named("a_over_4");
  (1.0 / c).named("1_over_c");
  (1.5 + s).named("1.5_plus_s");
  return (a - 1.0).named("a_minus_1");
});

// Expected values of `fn(a[i, j], b[j], c[i], s)` at every (i, j) of an r x n grid.
template <class Fn>
std::vector<double> grid(std::int64_t r, std::int64_t n, Fn fn) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < r; ++i)
    for (std::int64_t j = 0; j < n; ++j) out.push_back(fn(i, j));
  return out;
}

TEST_CASE("binary ops match formulas on odd shapes, both broadcast directions", "[op][binary]") {
  for (const auto& dims :
       {std::pair<std::int64_t, std::int64_t>{5, 7}, {11, 13}, {1, 1}, {13, 1}}) {
    // Named copies: clang 14 cannot capture structured bindings in the lambdas below.
    const std::int64_t r = dims.first, n = dims.second;
    INFO("rows " << r << ", cols " << n);
    const Array a = th::random_array(DType::f32, {r, n}, 1, -2, 2);
    const Array b = th::random_array(DType::f32, {n}, 2, 0.5, 2);
    const Array c = th::random_array(DType::f32, {r, 1}, 3, 0.5, 2);
    const Array s = Array::from<float>({}, {-1.25f});
    const NamedArrays in{{"a", a}, {"b", b}, {"c", c}, {"s", s}};
    const Evaluation e = evaluate_reference(arith, in, {});
    auto A = [&](std::int64_t i, std::int64_t j) { return a.at(i * n + j); };
    auto B = [&](std::int64_t j) { return b.at(j); };
    auto C = [&](std::int64_t i) { return c.at(i); };
    const double S = -1.25;
    // f32 results of one f32 operation: within a few ulps of the exact value.
    const double tol = 1e-6;
    th::require_close(e["a_plus_b"], grid(r, n, [&](auto i, auto j) { return A(i, j) + B(j); }),
                      tol);
    th::require_close(e["c_minus_a"], grid(r, n, [&](auto i, auto j) { return C(i) - A(i, j); }),
                      tol);
    th::require_close(e["b_times_c"], grid(r, n, [&](auto i, auto j) { return B(j) * C(i); }), tol);
    th::require_close(e["a_over_c"], grid(r, n, [&](auto i, auto j) { return A(i, j) / C(i); }),
                      tol);
    th::require_close(e["b_over_a"], grid(r, n, [&](auto i, auto j) { return B(j) / A(i, j); }),
                      tol * 1e3);  // |a| can be small, so the quotient large
    th::require_close(e["a_times_s"], grid(r, n, [&](auto i, auto j) { return A(i, j) * S; }), tol);
    th::require_close(e["s_minus_s"], {0.0}, 0);
    th::require_close(e["a_plus_2.5"], grid(r, n, [&](auto i, auto j) { return A(i, j) + 2.5; }),
                      tol);
    th::require_close(e["2.5_minus_a"], grid(r, n, [&](auto i, auto j) { return 2.5 - A(i, j); }),
                      tol);
    th::require_close(e["a_times_-3"], grid(r, n, [&](auto i, auto j) { return A(i, j) * -3; }),
                      tol);
    th::require_close(e["4_times_b"], grid(1, n, [&](auto, auto j) { return 4 * B(j); }), tol);
    th::require_close(e["a_over_4"], grid(r, n, [&](auto i, auto j) { return A(i, j) / 4; }), tol);
    th::require_close(e["1_over_c"], grid(r, 1, [&](auto i, auto) { return 1 / C(i); }), tol);
    th::require_close(e["1.5_plus_s"], {0.25}, 0);
    th::require_close(e["a_minus_1"], grid(r, n, [&](auto i, auto j) { return A(i, j) - 1; }), tol);
    CHECK(e["b_times_c"].dims() == std::vector<std::int64_t>{r, n});
    CHECK(e["s_minus_s"].dims().empty());
  }
}

TEST_CASE("binary ops on a hand-written example", "[op][binary]") {
  const NamedArrays in{{"a", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"b", Array::from<float>({3}, {10, 20, 40})},
                       {"c", Array::from<float>({2, 1}, {2, -4})},
                       {"s", Array::from<float>({}, {3})}};
  const Evaluation e = evaluate_reference(arith, in, {});
  th::require_close(e["a_plus_b"], {11, 22, 43, 14, 25, 46}, 0);
  th::require_close(e["c_minus_a"], {1, 0, -1, -8, -9, -10}, 0);
  th::require_close(e["b_times_c"], {20, 40, 80, -40, -80, -160}, 0);
  th::require_close(e["a_over_c"], {0.5, 1, 1.5, -1, -1.25, -1.5}, 0);
  th::require_close(e["b_over_a"], {10, 10, 40 / 3.0, 2.5, 4, 40 / 6.0}, 1e-6);
  th::require_close(e["2.5_minus_a"], {1.5, 0.5, -0.5, -1.5, -2.5, -3.5}, 0);
  th::require_close(e["1_over_c"], {0.5, -0.25}, 0);
}

constexpr auto int_arith = model([](Builder& g) {
  auto a = input<"a", Shape<rows>, i32>(g);
  auto b = input<"b", Shape<rows>, i32>(g);
  (a + b).named("sum");
  (a - b).named("diff");
  (a * b).named("prod");
  (a / b).named("quot");
  (a * 3.0).named("times3");
  return (a - 7.0).named("minus7");
});

constexpr auto long_arith = model([](Builder& g) {
  auto a = input<"a", Shape<rows>, i64>(g);
  auto b = input<"b", Shape<rows>, i64>(g);
  (a + b).named("sum");
  return (a * b).named("prod");
});

TEST_CASE("integer arithmetic: exact, truncating division, wrap-around", "[op][binary]") {
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const NamedArrays in{{"a", Array::from<std::int32_t>({7}, {7, -7, 7, -7, 0, kMax, kMin})},
                       {"b", Array::from<std::int32_t>({7}, {2, 2, -2, -2, 5, 1, -1})}};
  const Evaluation e = evaluate_reference(int_arith, in, {});
  // Division truncates toward zero (C++ and torch.div(..., rounding_mode="trunc")).
  th::require_close(e["quot"], {3, -3, -3, 3, 0, kMax, kMin}, 0);
  // Overflow wraps modulo 2^32 as in PyTorch; it is never undefined behaviour.
  th::require_close(e["sum"], {9, -5, 5, -9, 5, kMin, kMax}, 0);
  th::require_close(e["diff"], {5, -9, 9, -5, -5, kMax - 1, kMin + 1}, 0);
  th::require_close(e["prod"], {14, -14, -14, 14, 0, kMax, kMin}, 0);
  th::require_close(e["times3"], {21, -21, 21, -21, 0, kMax - 2, kMin}, 0);  // 3*kMax wraps
  th::require_close(e["minus7"], {0, -14, 0, -14, -7, kMax - 7, kMax - 6}, 0);
  CHECK(e["quot"].dtype() == DType::i32);

  // i64 stays exact beyond 2^53, where a double would round.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  const NamedArrays in64{{"a", Array::from<std::int64_t>({2}, {big, big})},
                         {"b", Array::from<std::int64_t>({2}, {2, -1})}};
  const Evaluation e64 = evaluate_reference(long_arith, in64, {});
  CHECK(e64["sum"].data<std::int64_t>()[0] == big + 2);
  CHECK(e64["sum"].data<std::int64_t>()[1] == big - 1);
  CHECK(e64["prod"].data<std::int64_t>()[0] == 2 * big);
}

TEST_CASE("integer division by zero is a stag::Error naming the node", "[op][binary]") {
  const NamedArrays in{{"a", Array::from<std::int32_t>({3}, {1, 2, 3})},
                       {"b", Array::from<std::int32_t>({3}, {1, 0, 1})}};
  try {
    evaluate_reference(int_arith, in, {});
    FAIL("no error");
  } catch (const stag::Error& err) {
    const std::string what = err.what();
    INFO(what);
    CHECK(what.find("quot") != std::string::npos);
    CHECK(what.find("division by zero") != std::string::npos);
    CHECK(what.find("element 1") != std::string::npos);
  }
}

// Float division by zero follows IEEE: inf, -inf and NaN, not an error.
TEST_CASE("float division by zero gives inf and NaN", "[op][binary]") {
  const NamedArrays in{{"a", Array::from<float>({1, 3}, {1, -1, 0})},
                       {"b", Array::from<float>({3}, {1, 1, 1})},
                       {"c", Array::from<float>({1, 1}, {0})},
                       {"s", Array::from<float>({}, {0})}};
  const Evaluation e = evaluate_reference(arith, in, {});
  const std::vector<double> q = e["a_over_c"].to_doubles();
  CHECK(q[0] == std::numeric_limits<double>::infinity());
  CHECK(q[1] == -std::numeric_limits<double>::infinity());
  CHECK(std::isnan(q[2]));
}

// A loss that reaches every operand through each op, broadcast on either side, so that the
// gradient check covers every VJP branch and sum_to (including to a [] scalar).
constexpr auto arith_loss = model([](Builder& g) {
  auto a = input<"a", Shape<rows, cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  auto s = input<"s", Shape<>>(g);
  auto w = input<"w", Shape<rows, cols>>(g);
  auto y = (a + b) * w + (c - a) * w + b * c + a / c + b / a + a * s + (2.0 / c - s) * 3.0;
  return sum<0, 1>(y * w) + s * s - 1.5;
});
constexpr auto arith_train = grad<arith_loss, "a", "b", "c", "s">();
static_assert(arith_train.shape(arith_train.output("grad/b")) == Shape<cols>::value);
static_assert(arith_train.shape(arith_train.output("grad/c")) == Shape<rows, 1>::value);
static_assert(arith_train.shape(arith_train.output("grad/s")) == Shape<>::value);

TEST_CASE("binary ops on odd shapes and several bindings", "[op][binary][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {11, 13}, {1, 1}};
  th::check_op({.what = "add, sub, mul, div with broadcasting",
                .forward = arith_loss,
                .train = arith_train,
                .inputs =
                    [&](int k) {
                      auto [r, n] = dims[k];
                      // a and c divide: keep them away from zero.
                      return NamedArrays{
                          {"a", th::random_array(DType::f32, {r, n}, 10 + k, 0.5, 2)},
                          {"b", th::random_array(DType::f32, {n}, 20 + k)},
                          {"c", th::random_array(DType::f32, {r, 1}, 30 + k, 0.5, 2)},
                          {"s", th::random_array(DType::f32, {}, 40 + k)},
                          {"w", th::random_array(DType::f32, {r, n}, 50 + k)}};
                    },
                .bindings = 3});
}

// Broadcasts oneDNN 2.6 has no fast path for run in the own loop (ops/binary/cpu.cpp): both
// operands broadcast (an outer product), a broadcast first operand of sub and div, and an inner
// axis broadcast. The CPU session must equal the reference bit for bit (same formulas), and
// say which kernel it used.
constexpr auto broadcasts = model([](Builder& g) {
  auto a = input<"a", Shape<2, 3, 4, 1>>(g);
  auto b = input<"b", Shape<2, 3, 1, 5>>(g);
  auto c = input<"c", Shape<3, 1, 5>>(g);
  auto d = input<"d", Shape<2, 3, 4, 5>>(g);
  (a * b).named("outer").output("outer");
  (c - d).named("sub_first").output("sub_first");
  (c / d).named("div_first").output("div_first");
  (d + a).named("inner").output("inner");
  minimum(a, b).named("min").output("min");
  return sum<0, 1, 2, 3>(maximum(d, c).named("max").output("max"));
});

TEST_CASE("broadcasts without a oneDNN fast path run the own loop, equal to the reference",
          "[op][binary]") {
  const NamedArrays in{{"a", th::random_array(DType::f32, {2, 3, 4, 1}, 1, -2, 2)},
                       {"b", th::random_array(DType::f32, {2, 3, 1, 5}, 2, -2, 2)},
                       {"c", th::random_array(DType::f32, {3, 1, 5}, 3, 0.5, 2)},
                       {"d", th::random_array(DType::f32, {2, 3, 4, 5}, 4, 0.5, 2)}};
  Session s(broadcasts, {.threads = 2});
  s.set_inputs(in);
  s.run();
  const Evaluation want = evaluate_reference(broadcasts, in, {});
  for (const char* name : {"outer", "sub_first", "div_first", "inner", "min", "max"}) {
    INFO(name);
    th::require_close(s.get(name), want[name], 0.0);
  }
  const std::string k = s.describe_kernels();
  INFO(k);
  for (const char* name : {"outer", "sub_first", "div_first", "min"})
    CHECK(k.find(std::string(name) + "  ") != std::string::npos);
  CHECK(k.find("outer  mul  own broadcast binary") != std::string::npos);
  CHECK(k.find("sub_first  sub  own broadcast binary") != std::string::npos);
  CHECK(k.find("div_first  div  own broadcast binary") != std::string::npos);
  CHECK(k.find("ref:") == std::string::npos);  // no generic oneDNN loop anywhere
}

}  // namespace

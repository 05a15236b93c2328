// minimum and maximum: values with broadcasting either way, a hand example with ties and NaN,
// integers, the tie rule of the gradient (all of it to the first operand) on every backend, and
// a gradient check on odd shapes with the operands kept apart (no ties within a difference step).
#include <cmath>
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

constexpr auto min_max = model([](Builder& g) {
  auto a = input<"a", Shape<rows, cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  minimum(a, b).named("min_ab");
  maximum(b, a).named("max_ba");
  minimum(c, b).named("min_cb");
  return maximum(a, c).named("max_ac");
});
static_assert(std::is_same_v<decltype(maximum(std::declval<Tensor<Shape<rows, 1>>>(),
                                              std::declval<Tensor<Shape<cols>>>())),
                             Tensor<Shape<rows, cols>>>);

TEST_CASE("minimum and maximum broadcast like add, on odd shapes", "[op][min_max]") {
  for (auto [r, n] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {11, 13}, {1, 1}}) {
    INFO(r << " x " << n);
    const Array a = th::random_array(DType::f32, {r, n}, 1 + r);
    const Array b = th::random_array(DType::f32, {n}, 2 + n);
    const Array c = th::random_array(DType::f32, {r, 1}, 3 + r);
    const Evaluation e = evaluate_reference(min_max, {{"a", a}, {"b", b}, {"c", c}}, {});
    std::vector<double> min_ab, max_ba, min_cb, max_ac;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        const double av = a.at(i * n + j), bv = b.at(j), cv = c.at(i);
        // Written as averages of the sum and the distance, not as comparisons.
        min_ab.push_back((av + bv - std::abs(av - bv)) / 2);
        max_ba.push_back((av + bv + std::abs(av - bv)) / 2);
        min_cb.push_back((cv + bv - std::abs(cv - bv)) / 2);
        max_ac.push_back((av + cv + std::abs(av - cv)) / 2);
      }
    th::require_close(e["min_ab"], min_ab, 1e-7);
    th::require_close(e["max_ba"], max_ba, 1e-7);
    th::require_close(e["min_cb"], min_cb, 1e-7);
    th::require_close(e["max_ac"], max_ac, 1e-7);
  }
}

constexpr auto pair = model([](Builder& g) {
  auto a = input<"a", Shape<cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  minimum(a, b).named("min");
  return maximum(a, b).named("max");
});

TEST_CASE("minimum and maximum by hand: ties, infinities and NaN", "[op][min_max]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const NamedArrays in{{"a", Array::from<float>({6}, {1, -2, 3, nan, 0, -inf})},
                       {"b", Array::from<float>({6}, {2, -3, 3, 1, nan, 5})}};
  const Evaluation e = evaluate_reference(pair, in, {});
  const std::vector<double> mn = e["min"].to_doubles(), mx = e["max"].to_doubles();
  CHECK(mn[0] == 1);
  CHECK(mx[0] == 2);
  CHECK(mn[1] == -3);
  CHECK(mx[1] == -2);
  CHECK(mn[2] == 3);
  CHECK(mx[2] == 3);
  CHECK(std::isnan(mn[3]));  // NaN in either operand gives NaN (torch.minimum / maximum)
  CHECK(std::isnan(mx[3]));
  CHECK(std::isnan(mn[4]));
  CHECK(std::isnan(mx[4]));
  CHECK(mn[5] == -inf);
  CHECK(mx[5] == 5);
}

constexpr auto int_pair = model([](Builder& g) {
  auto a = input<"a", Shape<cols>, i32>(g);
  auto b = input<"b", Shape<>, i32>(g);
  minimum(a, b).named("min");
  return maximum(a, b).named("max");
});

TEST_CASE("minimum and maximum on integers", "[op][min_max]") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const NamedArrays in{{"a", Array::from<std::int32_t>({5}, {-4, 0, 3, 9, kMin})},
                       {"b", Array::from<std::int32_t>({}, {3})}};
  const Evaluation e = evaluate_reference(int_pair, in, {});
  th::require_close(e["min"], {-4, 0, 3, 3, kMin}, 0);
  th::require_close(e["max"], {3, 3, 3, 9, 3}, 0);
  CHECK(e["max"].dtype() == DType::i32);
}

// The tie rule: where a == b the whole gradient goes to a (the first operand), none to b.
constexpr auto tie_loss = model([](Builder& g) {
  auto a = input<"a", Shape<cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto w = input<"w", Shape<cols>>(g);
  return sum<0>(minimum(a, b) * w) + sum<0>(maximum(a, b) * w * w);
});
constexpr auto tie_train = grad<tie_loss, "a", "b">();

TEST_CASE("minimum and maximum send a tie's gradient to the first operand", "[op][min_max]") {
  const NamedArrays in{{"a", Array::from<float>({4}, {1, 2, 3, -1})},
                       {"b", Array::from<float>({4}, {1, 5, 0, -1})},
                       {"w", Array::from<float>({4}, {2, 3, 4, 5})}};
  // d/da: min picks a at 0, 1 (tie, a < b) and 3 (tie); max picks a at 0, 2 and 3.
  const std::vector<double> want_a = {2 + 4, 3, 16, 5 + 25}, want_b = {0, 9, 4, 0};
  const int ga = tie_train.output("grad/a"), gb = tie_train.output("grad/b");
  const Evaluation r = evaluate_reference(tie_train, in, {});
  th::require_close(r.node(ga), want_a, 0);
  th::require_close(r.node(gb), want_b, 0);
  for (const th::Backend& be : th::backends()) {
    INFO("backend " << be.name);
    if (th::skips(be, tie_train)) continue;
    int seen = 0;
    for (const auto& [node, value] : be.run(tie_train, in, {}, {})) {
      if (node != ga && node != gb) continue;
      th::require_close(value, node == ga ? want_a : want_b, 0);
      ++seen;
    }
    CHECK(seen == 2);
  }
}

// Both operands reach the loss through broadcasting either way and a [] scalar (sum_to).
constexpr auto mm_loss = model([](Builder& g) {
  auto a = input<"a", Shape<rows, cols>>(g);
  auto b = input<"b", Shape<cols>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  auto s = input<"s", Shape<>>(g);
  auto w = input<"w", Shape<rows, cols>>(g);
  auto y = minimum(a, b).output("y_min") * w + maximum(c, a).output("y_max") +
           maximum(minimum(b, c), s).output("y_clip") * w;
  return sum<0, 1>(y * w);
});
constexpr auto mm_train = grad<mm_loss, "a", "b", "c", "s">();

// Values 0.1 apart on a grid of 0.2 with distinct offsets per tensor: no two operands within
// 0.05 of each other, so no tie moves within a difference step.
Array spaced(std::vector<std::int64_t> dims, std::uint64_t seed, double offset) {
  Array x = th::random_array(DType::f32, std::move(dims), seed, -10, 10);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.set(i, 0.2 * std::floor(x.at(i)) + offset);
  return x;
}

TEST_CASE("minimum and maximum: gradients on odd shapes", "[op][min_max][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {11, 13}, {1, 1}};
  th::check_op({.what = "minimum, maximum with broadcasting",
                .forward = mm_loss,
                .train = mm_train,
                .inputs =
                    [&](int k) {
                      auto [r, n] = dims[k];
                      return NamedArrays{{"a", spaced({r, n}, 10 + k, 0.0)},
                                         {"b", spaced({n}, 20 + k, 0.05)},
                                         {"c", spaced({r, 1}, 30 + k, 0.1)},
                                         {"s", spaced({}, 40 + k, 0.15)},
                                         {"w", th::random_array(DType::f32, {r, n}, 50 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

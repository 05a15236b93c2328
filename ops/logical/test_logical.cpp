// logical_and / logical_or / logical_not and the operators & | ! ~: truth tables, broadcasting
// (a scalar and symbolic dims), agreement of operators and functions.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;

constexpr auto table = model([](Builder& g) {
  auto a = input<"a", Shape<2, 2>, boolean>(g);
  auto b = input<"b", Shape<2, 2>, boolean>(g);
  (void)logical_and(a, b).named("and");
  (void)logical_or(a, b).named("or");
  return logical_not(a).named("not");
});

TEST_CASE("logical ops follow their truth tables", "[op][logical]") {
  const NamedArrays in{{"a", Array::from<bool>({2, 2}, {false, false, true, true})},
                       {"b", Array::from<bool>({2, 2}, {false, true, false, true})}};
  const Evaluation e = evaluate_reference(table, in, {});
  th::require_close(e["and"], {0, 0, 0, 1}, 0);
  th::require_close(e["or"], {0, 1, 1, 1}, 0);
  th::require_close(e["not"], {1, 1, 0, 0}, 0);
}

// Operators with broadcasting: [rows, len] & [len], | [] (a scalar), ! and ~.
constexpr auto ops = model([](Builder& g) {
  auto a = input<"a", Shape<rows, len>, boolean>(g);
  auto b = input<"b", Shape<len>, boolean>(g);
  auto s = input<"s", Shape<>, boolean>(g);
  (void)(a & b).named("and");
  (void)(a | s).named("or_scalar");
  (void)(!a).named("not");
  (void)(~b).named("tilde");
  return ((a & !b) | s).named("mixed");
});
static_assert(std::is_same_v<decltype(std::declval<Tensor<Shape<rows, 1>, boolean>>() &
                                      std::declval<Tensor<Shape<len>, boolean>>()),
                             Tensor<Shape<rows, len>, boolean>>);

TEST_CASE("logical operators broadcast, for several bindings and a scalar", "[op][logical]") {
  for (auto [r, l] : {std::pair{5, 7}, std::pair{11, 13}, std::pair{1, 1}}) {
    for (bool sv : {false, true}) {
      const auto seed = static_cast<std::uint64_t>(r * 100 + l);
      const Array a = th::random_array(DType::boolean, {r, l}, seed);
      const Array b = th::random_array(DType::boolean, {l}, seed + 1);
      const Evaluation e =
          evaluate_reference(ops, {{"a", a}, {"b", b}, {"s", Array::from<bool>({}, {sv})}}, {});
      std::vector<double> want_and, want_or, want_not, want_mixed, want_tilde;
      for (std::int64_t i = 0; i < r; ++i)
        for (std::int64_t j = 0; j < l; ++j) {
          const bool x = a.at(i * l + j) != 0, y = b.at(j) != 0;
          want_and.push_back(x && y);
          want_or.push_back(x || sv);
          want_not.push_back(!x);
          want_mixed.push_back((x && !y) || sv);
        }
      for (std::int64_t j = 0; j < l; ++j) want_tilde.push_back(b.at(j) == 0);
      th::require_close(e["and"], want_and, 0);
      th::require_close(e["or_scalar"], want_or, 0);
      th::require_close(e["not"], want_not, 0);
      th::require_close(e["tilde"], want_tilde, 0);
      th::require_close(e["mixed"], want_mixed, 0);
    }
  }
}

constexpr auto logical_graph = model([](Builder& g) {
  auto a = input<"a", Shape<rows, len>, boolean>(g);
  auto b = input<"b", Shape<rows, 1>, boolean>(g);
  return sum<0, 1>(cast<f32>(logical_or(logical_and(a, b), !a)));
});

TEST_CASE("logical ops agree in f32 and f64 graphs", "[op][logical]") {
  th::check_op({.what = "logical",
                .forward = logical_graph,
                .train = {},
                .inputs =
                    [](int k) {
                      return NamedArrays{
                          {"a", th::random_array(DType::boolean, {5 + 2 * k, 7}, 1 + k)},
                          {"b", th::random_array(DType::boolean, {5 + 2 * k, 1}, 2 + k)}};
                    },
                .bindings = 2});
}

}  // namespace

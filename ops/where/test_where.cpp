// where: hand-computed selection, broadcasting of all three operands (scalars included),
// integer operands, and gradients to a and b (summed back over broadcast dims).
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;

static_assert(std::is_same_v<decltype(where(std::declval<Tensor<Shape<rows, 1>, boolean>>(),
                                            std::declval<Tensor<Shape<len>>>(),
                                            std::declval<Tensor<Shape<>>>())),
                             Tensor<Shape<rows, len>>>);

constexpr auto selection = model([](Builder& g) {
  auto c = input<"c", Shape<rows, 1>, boolean>(g);
  auto a = input<"a", Shape<rows, len>>(g);
  auto b = input<"b", Shape<len>>(g);
  (void)where(c, a, -2.5).named("scalar_b");
  (void)where(c, 4.0, b).named("scalar_a");
  return where(c, a, b).named("y");
});

TEST_CASE("where selects a where cond is true, hand-computed", "[op][where]") {
  const NamedArrays in{{"c", Array::from<bool>({2, 1}, {true, false})},
                       {"a", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"b", Array::from<float>({3}, {-1, -2, -3})}};
  const Evaluation e = evaluate_reference(selection, in, {});
  th::require_close(e["y"], {1, 2, 3, -1, -2, -3}, 0);
  th::require_close(e["scalar_b"], {1, 2, 3, -2.5, -2.5, -2.5}, 0);
  th::require_close(e["scalar_a"], {4, 4, 4, -1, -2, -3}, 0);
}

constexpr auto select_int = model([](Builder& g) {
  auto c = input<"c", Shape<rows, len>, boolean>(g);
  auto a = input<"a", Shape<rows, len>, i32>(g);
  auto b = input<"b", Shape<>, i32>(g);
  return where(c, a, b).named("y");
});

TEST_CASE("where on integers, odd shapes and several bindings", "[op][where]") {
  for (auto [r, l] : {std::pair{5, 7}, std::pair{11, 13}, std::pair{13, 1}}) {
    const auto seed = static_cast<std::uint64_t>(r * 31 + l);
    const Array c = th::random_array(DType::boolean, {r, l}, seed);
    const Array a = th::random_array(DType::i32, {r, l}, seed + 1, -1000, 1000);
    const Evaluation e = evaluate_reference(
        select_int, {{"c", c}, {"a", a}, {"b", Array::from<std::int32_t>({}, {-7})}}, {});
    std::vector<double> want;
    for (std::int64_t i = 0; i < r * l; ++i) want.push_back(c.at(i) != 0 ? a.at(i) : -7.0);
    CHECK(e["y"].dtype() == DType::i32);
    th::require_close(e["y"], want, 0);
  }
}

constexpr auto where_loss = model([](Builder& g) {
  auto c = input<"c", Shape<rows, 1>, boolean>(g);
  auto a = input<"a", Shape<rows, len>>(g);
  auto b = input<"b", Shape<len>>(g);
  auto w = input<"w", Shape<rows, len>>(g);
  return sum<0, 1>(where(c, a, b) * w);
});
constexpr auto where_train = grad<where_loss, "a", "b">();

TEST_CASE("where gradients on odd shapes and several bindings", "[op][where][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {11, 13}, {1, 1}};
  th::check_op({.what = "where",
                .forward = where_loss,
                .train = where_train,
                .inputs =
                    [&](int k) {
                      auto [r, l] = dims[k];
                      return NamedArrays{{"c", th::random_array(DType::boolean, {r, 1}, 10 + k)},
                                         {"a", th::random_array(DType::f32, {r, l}, 20 + k)},
                                         {"b", th::random_array(DType::f32, {l}, 30 + k)},
                                         {"w", th::random_array(DType::f32, {r, l}, 40 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("where sends g to a where cond holds and the rest, summed, to b", "[op][where]") {
  const NamedArrays in{{"c", Array::from<bool>({3, 1}, {true, false, false})},
                       {"a", th::random_array(DType::f32, {3, 2}, 1)},
                       {"b", th::random_array(DType::f32, {2}, 2)},
                       {"w", Array::from<float>({3, 2}, {1, 2, 3, 4, 5, 6})}};
  const Evaluation e = evaluate_reference(where_train, in, {});
  th::require_close(e["grad/a"], {1, 2, 0, 0, 0, 0}, 0);
  th::require_close(e["grad/b"], {3 + 5, 4 + 6}, 0);
}

}  // namespace

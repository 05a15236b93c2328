// mse_loss: hand-computed values and gradients, a scalar, an empty input (0, not NaN), odd
// shapes and several bindings through the op harness, gradients of both operands.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto n = sym<"n">;
constexpr auto m = sym<"m">;

constexpr auto vec = model([](Builder& g) {
  auto pred = input<"pred", Shape<n>>(g);
  auto target = input<"target", Shape<n>>(g);
  auto loss = mse_loss(pred, target);
  static_assert(std::is_same_v<decltype(loss), Tensor<Shape<>, f32>>);
  return loss;
});
constexpr auto vec_train = grad<vec, "pred", "target">();

TEST_CASE("mse_loss matches hand-computed values and gradients", "[op][mse_loss]") {
  const NamedArrays in{{"pred", Array::from<float>({3}, {1, 2, 3})},
                       {"target", Array::from<float>({3}, {0, 2, 5})}};
  const Evaluation e = evaluate_reference(vec_train, in, {});
  th::require_close(e.result(), {5.0 / 3});                   // (1 + 0 + 4) / 3
  th::require_close(e["grad/pred"], {2.0 / 3, 0, -4.0 / 3});  // 2 (pred - target) / 3
  th::require_close(e["grad/target"], {-2.0 / 3, 0, 4.0 / 3});
}

TEST_CASE("mse_loss of an empty input is 0, not NaN", "[op][mse_loss]") {
  const NamedArrays in{{"pred", Array(DType::f32, {0})}, {"target", Array(DType::f32, {0})}};
  const Evaluation e = evaluate_reference(vec_train, in, {});
  th::require_close(e.result(), {0}, 0);
  CHECK(e["grad/pred"].numel() == 0);
}

TEST_CASE("mse_loss of scalars is the squared difference", "[op][mse_loss]") {
  static constexpr auto scalars = model([](Builder& g) {
    auto p = input<"p", Shape<>>(g);
    auto t = input<"t", Shape<>>(g);
    return mse_loss(p, t);
  });
  static constexpr auto scalars_train = grad<scalars, "p">();
  const NamedArrays in{{"p", Array::from<float>({}, {1.5})}, {"t", Array::from<float>({}, {-2})}};
  const Evaluation e = evaluate_reference(scalars_train, in, {});
  th::require_close(e.result(), {12.25});
  th::require_close(e["grad/p"], {7});
}

constexpr auto mse = model([](Builder& g) {
  auto x = input<"x", Shape<n, m, 3>>(g);
  auto target = input<"target", Shape<n, m, 3>>(g);
  auto w = param<Shape<3, 3>>(g / "head", "weight");
  return mse_loss(matmul(x, w), target) + mse_loss(x, target) * 0.5;
});
constexpr auto mse_train = grad<mse, "x", "target">();

TEST_CASE("mse_loss on odd shapes and several bindings", "[op][mse_loss][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {13, 11}, {1, 1}};
  th::check_op({.what = "mse_loss [n, m, 3]",
                .forward = mse,
                .train = mse_train,
                .inputs =
                    [&](int k) {
                      auto [a, b] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {a, b, 3}, 460 + k, -2, 2)},
                          {"target", th::random_array(DType::f32, {a, b, 3}, 470 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

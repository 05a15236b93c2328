// softmax / log_softmax: hand-computed values, masks (a fully masked row gives zeros), odd
// shapes and several bindings through the op harness, gradients of both forms.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;

constexpr auto plain = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  return softmax<-1>(x).named("y");
});

constexpr auto masked = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  auto keep = input<"keep", Shape<1, len>, boolean>(g);
  return softmax<1>(x, keep).named("y");
});

TEST_CASE("softmax matches hand-computed values", "[op][softmax]") {
  const NamedArrays in{{"x", Array::from<float>({2, 3}, {1, 2, 3, 0, 0, 0})}};
  const Evaluation e = evaluate_reference(plain, in, {});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  th::require_close(
      e["y"], {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1 / 3., 1 / 3., 1 / 3.});
}

TEST_CASE("masked softmax gives masked positions zero weight", "[op][softmax]") {
  const NamedArrays in{{"x", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"keep", Array::from<bool>({1, 3}, {true, false, true})}};
  const Evaluation e = evaluate_reference(masked, in, {});
  const double z = std::exp(1.0) + std::exp(3.0), z2 = std::exp(4.0) + std::exp(6.0);
  th::require_close(
      e["y"], {std::exp(1.0) / z, 0, std::exp(3.0) / z, std::exp(4.0) / z2, 0, std::exp(6.0) / z2});
}

TEST_CASE("a fully masked row gives zeros, not NaN", "[op][softmax]") {
  const NamedArrays in{{"x", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"keep", Array::from<bool>({1, 3}, {false, false, false})}};
  const Evaluation e = evaluate_reference(masked, in, {});
  th::require_close(e["y"], {0, 0, 0, 0, 0, 0}, 0);
}

// Losses that weight each output differently, so gradients are not trivially zero.
constexpr auto softmax_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  auto w = input<"w", Shape<rows, len>>(g);
  auto keep = input<"keep", Shape<rows, 1>, boolean>(g);
  return sum<0, 1>(softmax<-1>(x) * w) + sum<0, 1>(softmax<0>(x, keep) * w);
});
constexpr auto softmax_train = grad<softmax_loss, "x">();

constexpr auto log_softmax_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len, 3>>(g);
  auto w = input<"w", Shape<rows, len, 3>>(g);
  return sum<0, 1, 2>(log_softmax<1>(x) * w);
});
constexpr auto log_softmax_train = grad<log_softmax_loss, "x">();

TEST_CASE("softmax on odd shapes and several bindings", "[op][softmax][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {11, 13}, {1, 1}};
  th::check_op({.what = "softmax and masked softmax",
                .forward = softmax_loss,
                .train = softmax_train,
                .inputs =
                    [&](int k) {
                      auto [r, l] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, l}, 10 + k, -3, 3)},
                          {"w", th::random_array(DType::f32, {r, l}, 20 + k)},
                          {"keep", th::random_array(DType::boolean, {r, 1}, 30 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("log_softmax on odd shapes", "[op][softmax][gradcheck]") {
  th::check_op({.what = "log_softmax",
                .forward = log_softmax_loss,
                .train = log_softmax_train,
                .inputs =
                    [](int k) {
                      const std::int64_t r = 5 + 2 * k, l = 7 + 2 * k;
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, l, 3}, 40 + k, -3, 3)},
                          {"w", th::random_array(DType::f32, {r, l, 3}, 50 + k)}};
                    },
                .bindings = 2});
}

}  // namespace

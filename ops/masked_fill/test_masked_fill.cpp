// masked_fill: PyTorch semantics (true = fill), -inf fills, integer saturation, a scalar,
// broadcast masks on odd shapes and several bindings, agreement with masked softmax, and the
// gradient (g with filled positions zeroed).
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;

constexpr auto fill = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  auto m = input<"m", Shape<1, len>, boolean>(g);
  (void)masked_fill(x, m, -std::numeric_limits<double>::infinity()).named("ninf");
  return masked_fill(x, m, -1e9).named("y");
});

TEST_CASE("masked_fill fills where the mask is true, hand-computed", "[op][masked_fill]") {
  const NamedArrays in{{"x", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"m", Array::from<bool>({1, 3}, {false, true, false})}};
  const Evaluation e = evaluate_reference(fill, in, {});
  th::require_close(e["y"], {1, -1e9, 3, 4, -1e9, 6}, 0);
  const std::vector<double> ninf = e["ninf"].to_doubles();
  CHECK(ninf[0] == 1);
  CHECK((std::isinf(ninf[1]) && ninf[1] < 0));
  CHECK((std::isinf(ninf[4]) && ninf[4] < 0));
  CHECK(ninf[5] == 6);
}

constexpr auto fill_int = model([](Builder& g) {
  auto x = input<"x", Shape<5>, i32>(g);
  auto m = input<"m", Shape<5>, boolean>(g);
  (void)masked_fill(x, m, 1e30).named("big");
  (void)masked_fill(x, m, std::numeric_limits<double>::quiet_NaN()).named("nan");
  return masked_fill(x, m, -3.0).named("y");
});

TEST_CASE("masked_fill on integers saturates the value and maps NaN to 0", "[op][masked_fill]") {
  const NamedArrays in{{"x", Array::from<std::int32_t>({5}, {10, 20, 30, 40, 50})},
                       {"m", Array::from<bool>({5}, {true, false, false, true, true})}};
  const Evaluation e = evaluate_reference(fill_int, in, {});
  th::require_close(e["y"], {-3, 20, 30, -3, -3}, 0);
  th::require_close(e["big"], {2147483647.0, 20, 30, 2147483647.0, 2147483647.0}, 0);
  th::require_close(e["nan"], {0, 20, 30, 0, 0}, 0);
}

constexpr auto fill_scalar = model([](Builder& g) {
  auto x = input<"x", Shape<>>(g);
  auto m = input<"m", Shape<>, boolean>(g);
  return masked_fill(x, m, 7.0).named("y");
});

TEST_CASE("masked_fill of a scalar", "[op][masked_fill]") {
  for (bool m : {false, true}) {
    const Evaluation e = evaluate_reference(
        fill_scalar, {{"x", Array::from<float>({}, {2.5f})}, {"m", Array::from<bool>({}, {m})}},
        {});
    th::require_close(e["y"], {m ? 7.0 : 2.5}, 0);
  }
}

TEST_CASE("masked_fill with a broadcast mask on odd shapes", "[op][masked_fill]") {
  for (auto [r, l] : {std::pair{5, 7}, std::pair{11, 13}, std::pair{1, 5}}) {
    const auto seed = static_cast<std::uint64_t>(r * 17 + l);
    const Array x = th::random_array(DType::f32, {r, l}, seed);
    const Array m = th::random_array(DType::boolean, {1, l}, seed + 1);
    const Evaluation e = evaluate_reference(fill, {{"x", x}, {"m", m}}, {});
    std::vector<double> want;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t j = 0; j < l; ++j) want.push_back(m.at(j) != 0 ? -1e9 : x.at(i * l + j));
    th::require_close(e["y"], want, 0);
  }
}

// The PyTorch idiom softmax(x.masked_fill(~keep, -inf)) equals stag's masked softmax where at
// least one position is kept (a fully masked row gives zeros in both, thanks to softmax).
constexpr auto idiom = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  auto keep = input<"keep", Shape<rows, len>, boolean>(g);
  (void)softmax<-1>(x, keep).named("stag");
  return softmax<-1>(masked_fill(x, !keep, -std::numeric_limits<double>::infinity()))
      .named("torch");
});

TEST_CASE("masked_fill with -inf then softmax equals the masked softmax", "[op][masked_fill]") {
  const NamedArrays in{{"x", th::random_array(DType::f32, {7, 5}, 3, -3, 3)},
                       {"keep", th::random_array(DType::boolean, {7, 5}, 4)}};
  const Evaluation e = evaluate_reference(idiom, in, {});
  th::require_close(e["torch"], e["stag"], 1e-7);
}

constexpr auto fill_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 3, len>>(g);
  auto m = input<"m", Shape<rows, 1, len>, boolean>(g);
  auto w = input<"w", Shape<rows, 3, len>>(g);
  return sum<0, 1, 2>(masked_fill(x, m, 0.75) * w);
});
constexpr auto fill_train = grad<fill_loss, "x">();

TEST_CASE("masked_fill gradients on odd shapes and several bindings",
          "[op][masked_fill][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {2, 13}, {1, 1}};
  th::check_op({.what = "masked_fill",
                .forward = fill_loss,
                .train = fill_train,
                .inputs =
                    [&](int k) {
                      auto [r, l] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, 3, l}, 10 + k)},
                                         {"m", th::random_array(DType::boolean, {r, 1, l}, 20 + k)},
                                         {"w", th::random_array(DType::f32, {r, 3, l}, 30 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("masked_fill's gradient is zero at filled positions", "[op][masked_fill]") {
  const NamedArrays in{{"x", th::random_array(DType::f32, {1, 3, 2}, 1)},
                       {"m", Array::from<bool>({1, 1, 2}, {true, false})},
                       {"w", Array::from<float>({1, 3, 2}, {1, 2, 3, 4, 5, 6})}};
  th::require_close(evaluate_reference(fill_train, in, {})["grad/x"], {0, 2, 0, 4, 0, 6}, 0);
}

}  // namespace

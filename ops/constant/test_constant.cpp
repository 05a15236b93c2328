// constant (full, scalar, the x * 0.5 operand): values and shapes for static and symbolic
// dims under several bindings, integer and bool fills, NaN and infinities, and the harness
// (a constant takes no gradient; the tensor it scales gets the constant as its gradient).
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

static_assert(std::is_same_v<decltype(full<Shape<5, 7>>(std::declval<Builder&>(), 1.0)),
                             Tensor<Shape<5, 7>>>);
static_assert(std::is_same_v<decltype(full<Shape<batch, 1>, i32>(std::declval<Builder&>(), 1.0)),
                             Tensor<Shape<batch, 1>, i32>>);

constexpr auto fills = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  full<Shape<5, 7>>(g, 2.5).named("f57");
  full<Shape<batch, 1>, i32>(g, -3).named("ids");
  full<Shape<batch>, boolean>(g, 1).named("yes");
  full<Shape<2>, f64>(g, 0.1).named("tenth");
  full<Shape<3>>(g, std::numeric_limits<double>::infinity()).named("inf");
  full<Shape<>>(g, std::numeric_limits<double>::quiet_NaN()).named("nan");
  full<Shape<>, i64>(g, 4611686018427387904.0).named("big");  // 2^62, exact in a double
  return sum<0, 1>(x * 0.5);
});
static_assert(fills.count(op::constant) == 8);  // seven full<> and the 0.5 operand

TEST_CASE("constants fill their shape, several bindings", "[op][constant]") {
  for (std::int64_t b : {5, 1, 13}) {
    INFO("batch " << b);
    const Evaluation e =
        evaluate_reference(fills, {{"x", th::random_array(DType::f32, {b, 3}, 1)}}, {});
    th::require_close(e["f57"], std::vector<double>(35, 2.5), 0);
    CHECK(e["f57"].dims() == std::vector<std::int64_t>{5, 7});
    th::require_close(e["ids"], std::vector<double>(static_cast<std::size_t>(b), -3), 0);
    CHECK(e["ids"].dims() == std::vector<std::int64_t>{b, 1});
    CHECK(e["ids"].dtype() == DType::i32);
    th::require_close(e["yes"], std::vector<double>(static_cast<std::size_t>(b), 1), 0);
    CHECK(e["yes"].dtype() == DType::boolean);
    CHECK(e["tenth"].data<double>()[0] == 0.1);  // f64 keeps the double exactly
    CHECK(e["inf"].at(2) == std::numeric_limits<double>::infinity());
    CHECK(std::isnan(e["nan"].at(0)));
    CHECK(e["nan"].dims().empty());
    CHECK(e["big"].data<std::int64_t>()[0] == std::int64_t{1} << 62);
  }
}

TEST_CASE("f32 constants round to the nearest float", "[op][constant]") {
  const Evaluation e =
      evaluate_reference(fills, {{"x", Array::from<float>({1, 3}, {2, 4, 6})}}, {});
  CHECK(e["f57"].data<float>()[0] == 2.5f);
  th::require_close(e.result(), {6}, 0);  // (2 + 4 + 6) * 0.5
}

constexpr auto const_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  return sum<0, 1>(x * full<Shape<batch, 3>>(g, -1.5) + full<Shape<3>>(g, 2.0) * x * x) - 4.0;
});
constexpr auto const_train = grad<const_loss, "x">();

TEST_CASE("constants in a loss on several bindings", "[op][constant][gradcheck]") {
  const std::int64_t batches[] = {5, 1, 13};
  th::check_op(
      {.what = "constant",
       .forward = const_loss,
       .train = const_train,
       .inputs =
           [&](int k) {
             return NamedArrays{{"x", th::random_array(DType::f32, {batches[k], 3}, 10 + k)}};
           },
       .bindings = 3});
  // The gradient is -1.5 + 4 x: check it against the formula too.
  const Array x = th::random_array(DType::f32, {5, 3}, 3);
  const Evaluation e = evaluate_reference(const_train, {{"x", x}}, {});
  std::vector<double> want;
  for (std::int64_t i = 0; i < x.numel(); ++i) want.push_back(-1.5 + 4 * x.at(i));
  th::require_close(e["grad/x"], want, 1e-6);
}

}  // namespace

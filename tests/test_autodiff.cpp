// The autodiff pass: gradient outputs and shapes at compile time, fan-out summing, pruning,
// integer inputs without gradients, and numeric gradient checks of small graphs.
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 5>>(g);
  auto w = param<Shape<5, 7>>(g / "l1", "weight");
  auto b = param<Shape<7>>(g / "l1", "bias", kZeros);
  auto unused = param<Shape<3>>(g / "spare", "weight");
  (void)unused;
  auto h = tanh(matmul(x, w) + b);
  auto y = h * h + exp(h);  // h fans out three times
  return mean<0, 1>(y);
});
constexpr auto train = grad<net>();
constexpr auto train_x = grad<net, "x">();

static_assert(train.output("grad/l1.weight") >= 0);
static_assert(train.shape(train.output("grad/l1.weight")) == Shape<5, 7>::value);
static_assert(train.shape(train.output("grad/l1.bias")) == Shape<7>::value);
static_assert(train.shape(train.output("grad/spare.weight")) == Shape<3>::value);  // zeros
static_assert(train.output("grad/x") < 0);
static_assert(train_x.shape(train_x.output("grad/x")) == Shape<batch, 5>::value);
static_assert(train.count(op::matmul) == 2);  // forward + dW; dx is pruned (x needs no gradient)
static_assert(train_x.count(op::matmul) == 3);

TEST_CASE("backward nodes are named after the forward node they differentiate", "[autodiff]") {
  const GraphView g = train;
  const int gw = g.output("grad/l1.weight");
  REQUIRE(gw >= 0);
  CHECK((g.node(gw).flags & kFlagBackward) != 0);
  CHECK(g.name(gw).rfind("grad/", 0) == 0);
  CHECK(g.name(g.node(gw).grad_of) == "l1.weight");
}

// gradcheck's perturbed runs evaluate the loss alone (EvalOptions::result_only).
TEST_CASE("the reference evaluator can stop at the result: same loss, no gradient nodes run",
          "[autodiff][reference]") {
  const NamedArrays params = make_params(net, {}, 3);
  const NamedArrays in{{"x", th::random_array(DType::f32, {3, 5}, 9)}};
  const Evaluation all = evaluate_reference(train, in, params, {.f64 = true});
  const Evaluation loss = evaluate_reference(train, in, params, {.f64 = true, .result_only = true});
  CHECK(loss.result().at(0) == all.result().at(0));
  const GraphView g = train;
  int skipped = 0;
  for (int n = 0; n < g.size(); ++n) {
    INFO(g.name(n));
    const bool backward = (g.node(n).flags & kFlagBackward) != 0;
    const bool unused = g.name(n) == "spare.weight";                 // no path to the loss either
    CHECK((loss.node(n).raw() == nullptr) == (backward || unused));  // never computed
    CHECK(all.node(n).raw() != nullptr);
    skipped += backward;
  }
  CHECK(skipped >= 5);
  // A graph without a result cannot be cut at it.
  static constexpr auto no_result = model([](Builder& g) {
    auto x = input<"x", Shape<2>>(g);
    exp(x).output("y");  // a named output; the function returns nothing
  });
  CHECK_THROWS_WITH(evaluate_reference(no_result, {{"x", Array::from<float>({2}, {1, 2})}}, {},
                                       {.result_only = true}),
                    Catch::Contains("result_only: the graph has no result node"));
}

TEST_CASE("gradients of a small MLP match central differences", "[gradcheck]") {
  NamedArrays params = make_params(net, {}, 3);
  NamedArrays in{{"x", th::random_array(DType::f32, {3, 5}, 9)}};
  th::require_gradcheck(train, in, params);
  th::require_gradcheck(train_x, in, params);
}

}  // namespace

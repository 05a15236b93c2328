// Optimizer nodes: one AdamW/Adam/SGD step against an independent implementation of the
// formulas, reference vs CPU session over several steps, gradient clipping, per-parameter
// weight-decay switch, and skipping the update when the loss is not finite.
#include <cstring>

#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  auto w = param<Shape<3, 2>>(g / "lin", "weight");
  auto b = param<Shape<2>>(g / "lin", "bias", kZeros);
  auto y = tanh(matmul(x, w) + b);
  return mean<0, 1>(y * y);
});
constexpr auto adamw_step = train<net, AdamW{.weight_decay = 0.1}>();
constexpr auto adam_step = train<net, Adam{.weight_decay = 0.1}>();
constexpr auto sgd_step = train<net, Sgd{.momentum = 0.9, .weight_decay = 0.1, .nesterov = true}>();
constexpr auto clipped_step = train<net, AdamW{.clip_norm = 1e-3}>();
static_assert(adamw_step.count(op::adam_update) == 2);
static_assert(sgd_step.count(op::sgd_update) == 2);
static_assert(adamw_step.find("lin.weight.adam_m") >= 0);
static_assert(adamw_step.output("grad_norm") >= 0);

NamedArrays step_inputs(double lr, double t) {
  return {{"x", Array::from<float>({2, 3}, {0.5f, -1.f, 2.f, 1.5f, 0.25f, -0.75f})},
          {"lr", Array::from<float>({}, {static_cast<float>(lr)})},
          {"step", Array::from<float>({}, {static_cast<float>(t)})}};
}

TEST_CASE("one AdamW step matches the textbook formula, decay only where enabled", "[optim]") {
  Session s(adamw_step, {.threads = 1, .seed = 3});
  const NamedArrays before = [&] {
    NamedArrays c;
    for (const auto& [k, v] : s.params()) c.emplace(k, v.clone());
    return c;
  }();
  s.set_inputs(step_inputs(0.01, 1));
  s.run();
  for (std::string name : {"lin.weight", "lin.bias"}) {
    const Array g = s.get("grad/" + name);
    const std::vector<double> p0 = before.at(name).to_doubles(), gd = g.to_doubles();
    const double wd = name == "lin.weight" ? 0.1 : 0.0;  // biases are created with decay = false
    std::vector<double> want;
    for (std::size_t i = 0; i < p0.size(); ++i) {
      const double m = 0.1 * gd[i], v = 0.001 * gd[i] * gd[i];
      const double mhat = m / (1 - 0.9), vhat = v / (1 - 0.999);
      want.push_back(p0[i] - 0.01 * (mhat / (std::sqrt(vhat) + 1e-8) + wd * p0[i]));
    }
    INFO(name);
    th::require_close(s.params().at(name), want, 1e-6);
  }
}

TEST_CASE("reference and CPU session agree over several steps of each optimizer", "[optim]") {
  for (GraphView g : {GraphView(adamw_step), GraphView(adam_step), GraphView(sgd_step)}) {
    Session s(g, {.threads = 2, .seed = 4});
    NamedArrays ref_params;
    for (const auto& [k, v] : s.params()) ref_params.emplace(k, v.clone());
    for (int t = 1; t <= 4; ++t) {
      NamedArrays in = step_inputs(0.05, t);
      if (g.find("step") < 0) in.erase("step");
      s.set_inputs(in);
      s.run();
      evaluate_reference(g, in, ref_params);  // updates ref_params in place
    }
    for (const auto& [k, v] : s.params()) {
      INFO(k);
      th::require_close(v, ref_params.at(k), 1e-6);
    }
  }
}

TEST_CASE("gradient clipping scales the step to the global norm", "[optim]") {
  Session s(clipped_step, {.threads = 1, .seed = 3});
  s.set_inputs(step_inputs(1.0, 1));
  s.run();
  double total = 0;
  for (std::string name : {"lin.weight", "lin.bias"})
    for (double v : s.get("grad/" + name).to_doubles()) total += v * v;
  CHECK(s.get("grad_norm").at(0) == Approx(std::sqrt(total)).epsilon(1e-5));
  REQUIRE(std::sqrt(total) > 1e-3);  // clipping is active in this test
}

TEST_CASE("a NaN loss skips the update and loses nothing", "[optim]") {
  Session s(adamw_step, {.threads = 1, .seed = 3});
  const Array w0 = s.params().at("lin.weight").clone();
  NamedArrays in = step_inputs(0.01, 1);
  in["x"].set(0, std::nan(""));
  s.set_inputs(in);
  s.run();
  CHECK(std::isnan(s.result()));
  CHECK(std::memcmp(s.params().at("lin.weight").raw(), w0.raw(), w0.bytes()) == 0);
  CHECK(s.params().at("lin.weight.adam_m").to_doubles() == std::vector<double>(6, 0.0));
}

}  // namespace

namespace {
using namespace stag;

// A loss whose gradients are finite but whose squared sum overflows f32: the norm is infinite.
constexpr auto linear_net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  auto w = param<Shape<3, 2>>(g / "lin", "weight");
  return mean<0, 1>(matmul(x, w));
});

TEST_CASE("an infinite gradient norm skips the update, with or without clipping", "[optim]") {
  static constexpr auto plain = train<linear_net, AdamW{}>();
  static constexpr auto clipped = train<linear_net, AdamW{.clip_norm = 1.0}>();
  for (GraphView g : {GraphView(plain), GraphView(clipped)}) {
    Session s(g, {.threads = 1, .seed = 3});
    const Array w0 = s.params().at("lin.weight").clone();
    NamedArrays in = step_inputs(0.01, 1);
    in["x"] = Array::from<float>({2, 3}, {3e38f, 3e38f, 3e38f, 3e38f, 3e38f, 3e38f});
    s.set_inputs(in);
    s.run();
    CHECK(std::isfinite(s.get("grad/lin.weight").at(0)));  // each gradient is finite...
    CHECK(std::isinf(s.get("grad_norm").at(0)));           // ...their norm is not
    CHECK(std::memcmp(s.params().at("lin.weight").raw(), w0.raw(), w0.bytes()) == 0);
    CHECK(s.params().at("lin.weight.adam_m").to_doubles() == std::vector<double>(6, 0.0));
  }
}

}  // namespace

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
constexpr auto adamw_step = train_step<net, AdamW{.weight_decay = 0.1}>();
constexpr auto adam_step = train_step<net, Adam{.weight_decay = 0.1}>();
constexpr auto sgd_step =
    train_step<net, Sgd{.momentum = 0.9, .weight_decay = 0.1, .nesterov = true}>();
constexpr auto clipped_step = train_step<net, AdamW{.clip_norm = 1e-3}>();
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

// The settings as inputs: values exactly representable in f32, so that both forms agree bit for
// bit.
constexpr AdamW kCompiled{
    .beta1 = 0.5, .beta2 = 0.75, .eps = 0.0078125, .weight_decay = 0.25, .clip_norm = 0.5};
constexpr AdamW kAsInputs{.hparams_as_inputs = true};
constexpr auto adamw_compiled = train_step<net, kCompiled>();
constexpr auto adamw_inputs = train_step<net, kAsInputs>();
constexpr auto sgd_compiled =
    train_step<net, Sgd{.momentum = 0.5, .weight_decay = 0.25, .clip_norm = 0.5}>();
constexpr auto sgd_inputs = train_step<net, Sgd{.hparams_as_inputs = true}>();
constexpr auto adamw_update = update<net, kCompiled>();
constexpr auto net_grad = grad<net>();
static_assert(adamw_inputs.find("beta2") >= 0 && adamw_inputs.find("clip_norm") >= 0);
static_assert(sgd_inputs.find("momentum") >= 0 && sgd_inputs.find("beta1") < 0);
static_assert(adamw_update.find("lin.weight.grad") >= 0 && adamw_update.find("x") < 0);
static_assert(adamw_update.count(op::adam_update) == 2);

NamedArrays settings(double clip) {
  return {{"beta1", Array::from<float>({}, {0.5f})},
          {"beta2", Array::from<float>({}, {0.75f})},
          {"eps", Array::from<float>({}, {0.0078125f})},
          {"momentum", Array::from<float>({}, {0.5f})},
          {"weight_decay", Array::from<float>({}, {0.25f})},
          {"clip_norm", Array::from<float>({}, {static_cast<float>(clip)})}};
}

// Runs `steps` steps of `g` from seed 3 and returns the parameters (and state).
NamedArrays run_steps(GraphView g, int steps, const NamedArrays& extra = {}, double lr = 0.1) {
  Session s(g, {.threads = 1, .seed = 3});
  for (int t = 1; t <= steps; ++t) {
    NamedArrays in = step_inputs(lr, t);
    if (g.find("step") < 0) in.erase("step");
    for (const auto& [k, v] : extra)
      if (g.find(k) >= 0) in[k] = v;
    s.set_inputs(in);
    s.run();
  }
  NamedArrays out;
  for (const auto& [k, v] : s.params()) out.emplace(k, v.clone());
  return out;
}

void require_identical(const NamedArrays& a, const NamedArrays& b) {
  REQUIRE(a.size() == b.size());
  for (const auto& [k, v] : a) {
    INFO(k);
    REQUIRE(b.count(k) == 1);
    CHECK(std::memcmp(v.raw(), b.at(k).raw(), v.bytes()) == 0);
  }
}

TEST_CASE("optimizer settings as inputs give exactly the compiled settings' steps", "[optim]") {
  require_identical(run_steps(adamw_compiled, 3), run_steps(adamw_inputs, 3, settings(0.5)));
  require_identical(run_steps(sgd_compiled, 3), run_steps(sgd_inputs, 3, settings(0.5)));
  // Clipping is active at this learning rate and norm: without it the steps differ.
  const NamedArrays unclipped = run_steps(adamw_inputs, 3, settings(0.0));
  CHECK(std::memcmp(unclipped.at("lin.weight").raw(),
                    run_steps(adamw_compiled, 3).at("lin.weight").raw(),
                    unclipped.at("lin.weight").bytes()) != 0);
}

TEST_CASE("clip_norm <= 0 as an input turns clipping off", "[optim]") {
  constexpr AdamW kNoClip{.beta1 = 0.5, .beta2 = 0.75, .eps = 0.0078125, .weight_decay = 0.25};
  static constexpr auto no_clip = train_step<net, kNoClip>();
  require_identical(run_steps(no_clip, 2), run_steps(adamw_inputs, 2, settings(0.0)));
  require_identical(run_steps(no_clip, 2), run_steps(adamw_inputs, 2, settings(-1.0)));
}

TEST_CASE("the runtime weight decay spares parameters created without decay", "[optim]") {
  NamedArrays heavy = settings(0.0);
  heavy["weight_decay"] = Array::from<float>({}, {1000.f});
  const NamedArrays a = run_steps(adamw_inputs, 1, settings(0.0)),
                    b = run_steps(adamw_inputs, 1, heavy);
  CHECK(std::memcmp(a.at("lin.bias").raw(), b.at("lin.bias").raw(), a.at("lin.bias").bytes()) == 0);
  CHECK(std::memcmp(a.at("lin.weight").raw(), b.at("lin.weight").raw(),
                    a.at("lin.weight").bytes()) != 0);
}

TEST_CASE("update<> applied to grad<>'s gradients is train_step<>'s step", "[optim]") {
  Session fused(adamw_compiled, {.threads = 1, .seed = 3});
  Session g(net_grad, {.threads = 1, .seed = 3});
  Session u(adamw_update, {.threads = 1, .seed = 3, .shared_params = g.params()});
  CHECK(u.params().at("lin.weight").raw() ==
        g.params().at("lin.weight").raw());  // shared, not copied
  for (int t = 1; t <= 3; ++t) {
    fused.set_inputs(step_inputs(0.1, t));
    fused.run();
    g.set_inputs({{"x", step_inputs(0.1, t).at("x")}});
    g.run();
    NamedArrays in = step_inputs(0.1, t);
    in.erase("x");
    for (const char* p : {"lin.weight", "lin.bias"})
      in[std::string(p) + ".grad"] = g.get(std::string("grad/") + p);
    u.set_inputs(in);
    u.run();
    CHECK(u.get("grad_norm").at(0) == fused.get("grad_norm").at(0));
  }
  NamedArrays after;
  for (const auto& [k, v] : u.params()) after.emplace(k, v);
  require_identical(after, fused.params());
}

// A loss whose gradients are finite but whose squared sum overflows f32: the norm is infinite.
constexpr auto linear_net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  auto w = param<Shape<3, 2>>(g / "lin", "weight");
  return mean<0, 1>(matmul(x, w));
});

TEST_CASE("an infinite gradient norm skips the update, with or without clipping", "[optim]") {
  static constexpr auto plain = train_step<linear_net, AdamW{}>();
  static constexpr auto clipped = train_step<linear_net, AdamW{.clip_norm = 1.0}>();
  static constexpr auto as_inputs = train_step<linear_net, AdamW{.hparams_as_inputs = true}>();
  for (GraphView g : {GraphView(plain), GraphView(clipped), GraphView(as_inputs)}) {
    Session s(g, {.threads = 1, .seed = 3});
    const Array w0 = s.params().at("lin.weight").clone();
    NamedArrays in = step_inputs(0.01, 1);
    in["x"] = Array::from<float>({2, 3}, {3e38f, 3e38f, 3e38f, 3e38f, 3e38f, 3e38f});
    for (const auto& [k, v] : settings(1.0))
      if (g.find(k) >= 0) in[k] = v;
    s.set_inputs(in);
    s.run();
    INFO("clipping: " << (g.find("clip_norm") >= 0 ? "input" : "compiled"));
    CHECK(std::isfinite(s.get("grad/lin.weight").at(0)));  // each gradient is finite...
    CHECK(std::isinf(s.get("grad_norm").at(0)));           // ...their norm is not
    CHECK(std::memcmp(s.params().at("lin.weight").raw(), w0.raw(), w0.bytes()) == 0);
    CHECK(s.params().at("lin.weight.adam_m").to_doubles() == std::vector<double>(6, 0.0));
  }
}

}  // namespace

// Updating in the backward pass (`in_backward`): the same steps, each update right after its
// gradient, and the gradients' memory reused.
namespace {
using namespace stag;

constexpr auto ib_adamw = train_step<net, AdamW{.weight_decay = 0.1, .in_backward = true}>();
constexpr auto ib_adam = train_step<net, Adam{.weight_decay = 0.1, .in_backward = true}>();
constexpr auto ib_sgd =
    train_step<net,
               Sgd{.momentum = 0.9, .weight_decay = 0.1, .nesterov = true, .in_backward = true}>();
constexpr auto ib_inputs = train_step<net, AdamW{.hparams_as_inputs = true, .in_backward = true}>();
static_assert(ib_adamw.output("grad_norm") >= 0);
static_assert(ib_adamw.output("grad/lin.weight") < 0 && adamw_step.output("grad/lin.weight") >= 0);
static_assert(ib_inputs.find("weight_decay") >= 0 && ib_inputs.find("clip_norm") < 0);
static_assert(ib_adamw.count(op::adam_update) == 2 && ib_sgd.count(op::sgd_update) == 2);

TEST_CASE("in_backward gives the same steps as updating after the backward pass, bit for bit",
          "[optim]") {
  require_identical(run_steps(adamw_step, 3), run_steps(ib_adamw, 3));
  require_identical(run_steps(adam_step, 3), run_steps(ib_adam, 3));
  require_identical(run_steps(sgd_step, 3), run_steps(ib_sgd, 3));
  constexpr AdamW kNoClip{.beta1 = 0.5, .beta2 = 0.75, .eps = 0.0078125, .weight_decay = 0.25};
  static constexpr auto no_clip = train_step<net, kNoClip>();
  require_identical(run_steps(no_clip, 3), run_steps(ib_inputs, 3, settings(0.0)));
}

// Four 128-wide layers: the gradients (256 KiB of weights) outweigh the activations of 4 rows.
constexpr auto deep = model([](Builder& g) {
  auto h = input<"x", Shape<batch, 128>>(g);
  for (int i = 0; i < 4; ++i) h = tanh(linear<128>(g / "l" / i, h));
  return mean<0, 1>(h * h);
});
constexpr auto deep_step = train_step<deep, AdamW{}>();
constexpr auto deep_ib = train_step<deep, AdamW{.in_backward = true}>();

TEST_CASE("in_backward updates each weight right after its gradient and reuses its memory",
          "[optim]") {
  const NamedArrays in = {{"x", th::random_array(DType::f32, {4, 128}, 5, -1, 1)},
                          {"lr", Array::from<float>({}, {0.01f})},
                          {"step", Array::from<float>({}, {1.f})}};
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO("schedule " << static_cast<int>(sched));
    Session plain(deep_step, {.threads = 2, .schedule = sched, .seed = 7});
    Session ib(deep_ib, {.threads = 2, .schedule = sched, .seed = 7});
    for (int t = 1; t <= 3; ++t) {
      NamedArrays x = in;
      x["step"] = Array::from<float>({}, {static_cast<float>(t)});
      plain.set_inputs(x);
      plain.run();
      ib.set_inputs(x);
      ib.run();
      CHECK(plain.result() == ib.result());
      CHECK(plain.get("grad_norm").at(0) == ib.get("grad_norm").at(0));
    }
    NamedArrays a, b;
    for (const auto& [k, v] : plain.params()) a.emplace(k, v);
    for (const auto& [k, v] : ib.params()) b.emplace(k, v);
    require_identical(a, b);
    // The last layer's weight is updated before the first layer's weight gradient is computed.
    const Plan& p = ib.plan();
    const auto update_of = [&](std::string_view param) {
      const int w = p.graph.find(param);
      REQUIRE(w >= 0);
      for (int n = 0; n < p.graph.size(); ++n)
        if (p.graph.node(n).op == op::adam_update && p.graph.node(n).in[0] == w) return n;
      FAIL("no update of " << param);
      return -1;
    };
    const auto at = [&](int n) { return p.position[static_cast<std::size_t>(n)]; };
    CHECK(at(update_of("l.3.weight")) < at(p.graph.node(update_of("l.0.weight")).in[1]));
    // The plain step holds all four weight gradients at once; this one at most two.
    const std::size_t weight_bytes = 128 * 128 * sizeof(float);
    CHECK(plain.arena_bytes() >= 4 * weight_bytes);
    CHECK(ib.arena_bytes() + 2 * weight_bytes <= plain.arena_bytes());
  }
}

// Two parameters: `lin.weight`'s gradient is finite but its square overflows, `v`'s is small.
constexpr auto two_params = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  auto w = param<Shape<3, 2>>(g / "lin", "weight");
  auto v = param<Shape<2>>(g / "extra", "v");
  return mean<0, 1>(matmul(x, w)) + mean<0>(v * v);
});

TEST_CASE("in_backward skips a parameter whose gradient is not finite, and all on a NaN loss",
          "[optim]") {
  static constexpr auto step = train_step<two_params, AdamW{.in_backward = true}>();
  Session s(step, {.threads = 1, .seed = 3});
  const Array w0 = s.params().at("lin.weight").clone(), v0 = s.params().at("extra.v").clone();
  NamedArrays in = step_inputs(0.01, 1);
  in["x"] = Array::from<float>({2, 3}, {1e30f, 1e30f, 1e30f, 1e30f, 1e30f, 1e30f});
  s.set_inputs(in);
  s.run();
  REQUIRE(std::isfinite(s.result()));
  CHECK(std::isinf(s.get("grad_norm").at(0)));
  CHECK(std::memcmp(s.params().at("lin.weight").raw(), w0.raw(), w0.bytes()) == 0);
  CHECK(std::memcmp(s.params().at("extra.v").raw(), v0.raw(), v0.bytes()) != 0);  // updated
  const Array v1 = s.params().at("extra.v").clone();
  in["x"].set(0, std::nan(""));
  s.set_inputs(in);
  s.run();
  CHECK(std::isnan(s.result()));
  CHECK(std::memcmp(s.params().at("extra.v").raw(), v1.raw(), v1.bytes()) == 0);
  CHECK(std::memcmp(s.params().at("lin.weight").raw(), w0.raw(), w0.bytes()) == 0);
}

}  // namespace

// cross_entropy: hand-computed losses and gradients, ignore_index (and a fully ignored batch:
// 0, not NaN), huge logits (log-sum-exp), labels out of range, a scalar position, odd shapes
// and several bindings through the op harness; label smoothing (values, gradients, CPU ==
// reference).
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr auto classes = sym<"classes">;

constexpr auto small = model([](Builder& g) {
  auto logits = input<"logits", Shape<batch, 3>>(g);
  auto labels = input<"labels", Shape<batch>, i32>(g);
  auto loss = cross_entropy(logits, labels).named("loss");
  static_assert(std::is_same_v<decltype(loss), Tensor<Shape<>, f32>>);
  return loss;
});
constexpr auto small_train = grad<small, "logits">();
static_assert(small_train.count(op::cross_entropy_backward) == 1);

NamedArrays small_inputs(std::initializer_list<float> logits,
                         std::initializer_list<std::int32_t> labels) {
  const auto rows = static_cast<std::int64_t>(labels.size());
  return {{"logits", Array::from<float>({rows, 3}, logits)},
          {"labels", Array::from<std::int32_t>({rows}, labels)}};
}

TEST_CASE("cross_entropy matches hand-computed values", "[op][cross_entropy]") {
  const Evaluation e =
      evaluate_reference(small_train, small_inputs({1, 2, 3, 0, 0, 0}, {2, 0}), {});
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double l0 = std::log(z) - 3, l1 = std::log(3.0);
  th::require_close(e.result(), {(l0 + l1) / 2});
  // dlogits = (softmax - onehot) / 2.
  const double p0 = std::exp(1.0) / z, p1 = std::exp(2.0) / z, p2 = std::exp(3.0) / z;
  th::require_close(e["grad/logits"],
                    {p0 / 2, p1 / 2, (p2 - 1) / 2, (1.0 / 3 - 1) / 2, 1.0 / 6, 1.0 / 6});
}

TEST_CASE("cross_entropy skips ignore_index positions and divides by the kept count",
          "[op][cross_entropy]") {
  const Evaluation e =
      evaluate_reference(small_train, small_inputs({1, 2, 3, 0, 0, 0, 5, 1, 1}, {2, -100, 1}), {});
  const double z0 = std::exp(1.0) + std::exp(2.0) + std::exp(3.0),
               z2 = std::exp(5.0) + 2 * std::exp(1.0);
  th::require_close(e.result(), {((std::log(z0) - 3) + (std::log(z2) - 1)) / 2});
  const std::vector<double> grad = e["grad/logits"].to_doubles();
  CHECK(grad[3] == 0);  // the ignored row gets exactly zero
  CHECK(grad[4] == 0);
  CHECK(grad[5] == 0);
  CHECK(grad[7] == Approx((std::exp(1.0) / z2 - 1) / 2));
}

TEST_CASE("a fully ignored batch gives loss 0 and zero gradients, not NaN", "[op][cross_entropy]") {
  const Evaluation e =
      evaluate_reference(small_train, small_inputs({1, 2, 3, 4, 5, 6}, {-100, -100}), {});
  th::require_close(e.result(), {0}, 0);
  th::require_close(e["grad/logits"], {0, 0, 0, 0, 0, 0}, 0);
}

TEST_CASE("cross_entropy with another ignore_index", "[op][cross_entropy]") {
  static constexpr auto pad0 = model([](Builder& g) {
    auto logits = input<"logits", Shape<batch, 3>>(g);
    auto labels = input<"labels", Shape<batch>, i64>(g);
    return cross_entropy(logits, labels, 0);
  });
  const NamedArrays in{{"logits", Array::from<float>({2, 3}, {1, 2, 3, 9, 9, 9})},
                       {"labels", Array::from<std::int64_t>({2}, {1, 0})}};
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  th::require_close(evaluate_reference(pad0, in, {}).result(), {std::log(z) - 2});
}

TEST_CASE("cross_entropy is stable for huge logits (log-sum-exp)", "[op][cross_entropy]") {
  // NOTE: exp(1000) overflows f32 and f64; subtracting the row maximum keeps it finite.
  const Evaluation e =
      evaluate_reference(small_train, small_inputs({1000, 0, -1000, 1000, 0, -1000}, {0, 1}), {});
  // Row 0: -log softmax = log(1 + e^-1000 + e^-2000) = 0 in double; row 1: 1000.
  th::require_close(e.result(), {500}, 1e-3);
  th::require_close(e["grad/logits"], {0, 0, 0, 0.5, -0.5, 0}, 1e-6);
}

TEST_CASE("a label outside 0 ... C-1 is an error naming the node, position, label and C",
          "[op][cross_entropy]") {
  static constexpr auto seq_loss = model([](Builder& g) {
    auto logits = input<"logits", Shape<batch, seq, 5>>(g);
    auto labels = input<"labels", Shape<batch, seq>, i32>(g);
    return cross_entropy(logits, labels).named("loss");
  });
  Array labels(DType::i32, {2, 3});
  labels.set(1 * 3 + 2, 7);
  const Array logits(DType::f32, {2, 3, 5});
  CHECK_THROWS_WITH(evaluate_reference(seq_loss, {{"logits", logits}, {"labels", labels}}, {}),
                    "stag: cross_entropy 'loss': label 7 at [1, 2] is outside [0, 5) and is not "
                    "ignore_index (-100)");
  labels.set(1 * 3 + 2, -1);
  CHECK_THROWS_WITH(evaluate_reference(seq_loss, {{"logits", logits}, {"labels", labels}}, {}),
                    "stag: cross_entropy 'loss': label -1 at [1, 2] is outside [0, 5) and is not "
                    "ignore_index (-100)");
  labels.set(1 * 3 + 2, 4);
  CHECK_NOTHROW(evaluate_reference(seq_loss, {{"logits", logits}, {"labels", labels}}, {}));
}

TEST_CASE("cross_entropy of one position (logits [C], label [])", "[op][cross_entropy]") {
  static constexpr auto one = model([](Builder& g) {
    auto logits = input<"logits", Shape<4>>(g);
    auto label = input<"label", Shape<>, i32>(g);
    return cross_entropy(logits, label);
  });
  const NamedArrays in{{"logits", Array::from<float>({4}, {0.5, -1, 2, 0})},
                       {"label", Array::from<std::int32_t>({}, {3})}};
  const double z = std::exp(0.5) + std::exp(-1.0) + std::exp(2.0) + 1;
  th::require_close(evaluate_reference(one, in, {}).result(), {std::log(z)});
}

// Gradients of logits [batch, seq, classes] (an input and, through a projection, a parameter).
constexpr auto ce_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, classes>>(g);
  auto labels = input<"labels", Shape<batch, seq>, i32>(g);
  auto w = param<Shape<classes, classes>>(g / "head", "weight");
  return cross_entropy(matmul(x, w), labels) + cross_entropy(x * 3.0, labels);
});
constexpr auto ce_train = grad<ce_loss, "x">();

// Labels in [0, C) with about one in five ignored.
Array labels_for(std::int64_t b, std::int64_t s, std::int64_t c, std::uint64_t seed) {
  Array y = th::random_array(DType::i32, {b, s}, seed, 0, static_cast<double>(c));
  const Array drop = th::random_array(DType::f32, {b, s}, seed + 1, 0, 1);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    if (drop.at(i) < 0.2) y.set(i, -100);
  return y;
}

TEST_CASE("cross_entropy on odd shapes and several bindings", "[op][cross_entropy][gradcheck]") {
  const std::array<std::int64_t, 3> dims[] = {{5, 7, 3}, {11, 13, 5}, {1, 1, 2}};
  th::check_op({.what = "cross_entropy [batch, seq, classes]",
                .forward = ce_loss,
                .train = ce_train,
                .inputs =
                    [&](int k) {
                      auto [b, s, c] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {b, s, c}, 360 + k, -3, 3)},
                          {"labels", labels_for(b, s, c, 370 + k)}};
                    },
                .bindings = 3});
}

// Label smoothing 0.1 over 3 classes: target (0.9 onehot + 0.1 / 3).
constexpr auto smoothed = model([](Builder& g) {
  auto logits = input<"logits", Shape<batch, 3>>(g);
  auto labels = input<"labels", Shape<batch>, i32>(g);
  return cross_entropy(logits, labels, {.label_smoothing = 0.1}).named("loss");
});
constexpr auto smoothed_train = grad<smoothed, "logits">();

TEST_CASE("label smoothing matches the smoothed target's cross-entropy", "[op][cross_entropy]") {
  const Evaluation e = evaluate_reference(
      smoothed_train, small_inputs({1, 2, 3, 0, 0, 0, 4, 4, 4}, {2, -100, 0}), {});
  // Row 0: -sum_c t_c log p_c with t = (0.1/3, 0.1/3, 0.9 + 0.1/3); row 2: uniform p, so log 3
  // whatever the target. The ignored row counts for nothing.
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double lp[3] = {1 - std::log(z), 2 - std::log(z), 3 - std::log(z)};
  const double e3 = 0.1 / 3;
  const double row0 = -(e3 * lp[0] + e3 * lp[1] + (0.9 + e3) * lp[2]);
  th::require_close(e.result(), {(row0 + std::log(3.0)) / 2});
  const double p[3] = {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z};
  th::require_close(e["grad/logits"],
                    {(p[0] - e3) / 2, (p[1] - e3) / 2, (p[2] - 0.9 - e3) / 2, 0, 0, 0,
                     (1.0 / 3 - 0.9 - e3) / 2, (1.0 / 3 - e3) / 2, (1.0 / 3 - e3) / 2});
}

constexpr auto ce_smooth_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, classes>>(g);
  auto labels = input<"labels", Shape<batch, seq>, i32>(g);
  auto w = param<Shape<classes, classes>>(g / "head", "weight");
  return cross_entropy(matmul(x, w), labels, {.label_smoothing = 0.2}) +
         cross_entropy(x * 3.0, labels, {.ignore_index = -100, .label_smoothing = 0.05});
});
constexpr auto ce_smooth_train = grad<ce_smooth_loss, "x">();

TEST_CASE("label smoothing on odd shapes: gradients and the CPU kernel",
          "[op][cross_entropy][gradcheck]") {
  const std::array<std::int64_t, 3> dims[] = {{5, 7, 3}, {3, 9, 17}, {1, 1, 2}};
  th::check_op({.what = "cross_entropy with label smoothing",
                .forward = ce_smooth_loss,
                .train = ce_smooth_train,
                .inputs =
                    [&](int k) {
                      auto [b, s, c] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {b, s, c}, 380 + k, -3, 3)},
                          {"labels", labels_for(b, s, c, 390 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

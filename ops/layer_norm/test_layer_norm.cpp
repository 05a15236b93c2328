// layer_norm: hand-computed values, [S, D] weights, the no-affine form, the large-mean trap,
// odd shapes and several symbol bindings through the op harness, and gradients of all inputs.
#include <stdexcept>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto seq = sym<"seq">;
constexpr auto dim = sym<"dim">;

// An independent layer norm over rows of n elements (the textbook formula, no shared code).
std::vector<double> naive_layer_norm(const std::vector<double>& x, std::size_t n,
                                     const std::vector<double>& w, const std::vector<double>& b,
                                     double eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < n; ++i) mean += x[r * n + i] / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i)
      var += (x[r * n + i] - mean) * (x[r * n + i] - mean) / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double xh = (x[r * n + i] - mean) / std::sqrt(var + eps);
      y[r * n + i] = xh * (w.empty() ? 1.0 : w[i]) + (b.empty() ? 0.0 : b[i]);
    }
  }
  return y;
}

constexpr auto affine = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 3>>(g);
  auto w = param<Shape<3>>(g / "ln", "weight", kOnes);
  auto b = param<Shape<3>>(g / "ln", "bias", kZeros);
  auto y = layer_norm(x, w, b).named("y");
  static_assert(std::is_same_v<decltype(y), Tensor<Shape<rows, 3>, f32>>);
  return sum<0, 1>(y);
});
constexpr auto affine_train = grad<affine>();
static_assert(affine_train.count(op::layer_norm_backward) == 0);  // x needs no gradient here
static_assert(affine_train.count(op::layer_norm) == 2);           // forward + the no-affine dw term
static_assert(affine_train.shape(affine_train.output("grad/ln.weight")) == Shape<3>::value);

TEST_CASE("layer_norm matches hand-computed values", "[op][layer_norm]") {
  // Row 0: mean 2, var 2/3. Row 1 [2, 4, 9]: mean 5, deviations -3, -1, 4, var 26/3.
  const NamedArrays in{{"x", Array::from<float>({2, 3}, {1, 2, 3, 2, 4, 9})}};
  const NamedArrays params{{"ln.weight", Array::from<float>({3}, {1, 2, 0.5})},
                           {"ln.bias", Array::from<float>({3}, {0, 1, -1})}};
  const Evaluation e = evaluate_reference(affine_train, in, params);
  const double r0 = 1 / std::sqrt(2.0 / 3 + 1e-5), r1 = 1 / std::sqrt(26.0 / 3 + 1e-5);
  th::require_close(e["y"], {-r0, 1, 0.5 * r0 - 1, -3 * r1, -2 * r1 + 1, 2 * r1 - 1});
  // The loss is sum(y): dw = sum over rows of xhat, db = the number of rows.
  th::require_close(e["grad/ln.weight"], {-r0 - 3 * r1, -r1, r0 + 4 * r1});
  th::require_close(e["grad/ln.bias"], {2, 2, 2});
}

TEST_CASE("layer_norm of a constant row is 0 (eps inside the sqrt), then the bias",
          "[op][layer_norm]") {
  const NamedArrays in{{"x", Array::from<float>({1, 3}, {7, 7, 7})}};
  const NamedArrays params{{"ln.weight", Array::from<float>({3}, {1, 2, 3})},
                           {"ln.bias", Array::from<float>({3}, {0.5, 0, -1})}};
  th::require_close(evaluate_reference(affine, in, params)["y"], {0.5, 0, -1}, 0);
}

TEST_CASE("layer_norm keeps precision when the mean dwarfs the spread", "[op][layer_norm]") {
  // NOTE: E[x^2] - E[x]^2 in f32 would give var = 0 or garbage here (1e8 vs a spread of 1).
  const NamedArrays in{{"x", Array::from<float>({1, 3}, {10000, 10001, 10002})}};
  const NamedArrays params{{"ln.weight", Array::from<float>({3}, {1, 1, 1})},
                           {"ln.bias", Array::from<float>({3}, {0, 0, 0})}};
  const double r = 1 / std::sqrt(2.0 / 3 + 1e-5);
  th::require_close(evaluate_reference(affine, in, params)["y"], {-r, 0, r}, 1e-6);
}

// A weight over the last two dims: [seq, 5] for x [rows, seq, 5].
constexpr auto two_dims = model([](Builder& g) {
  auto x = input<"x", Shape<rows, seq, 5>>(g);
  auto w = param<Shape<seq, 5>>(g / "ln", "weight");
  auto b = param<Shape<seq, 5>>(g / "ln", "bias", ParamOpts{Init::uniform, -0.5, 0.5, false});
  auto plain1 = layer_norm(x).named("plain1");
  auto plain2 = layer_norm<2>(x, 1e-3).named("plain2");
  return sum<0, 1, 2>(layer_norm(x, w, b).named("y") + plain1 * 0.5 + plain2 * 0.25);
});

TEST_CASE("layer_norm over two trailing dims and the no-affine forms", "[op][layer_norm]") {
  const Array x = th::random_array(DType::f32, {3, 7, 5}, 5, -2, 3);
  const NamedArrays in{{"x", x}};
  Bindings bd = bind_symbols(two_dims, in, nullptr);
  NamedArrays params;
  init_params(two_dims, bd, params, 4);
  const Evaluation e = evaluate_reference(two_dims, in, params);
  const std::vector<double> xs = x.to_doubles();
  th::require_close(e["y"],
                    naive_layer_norm(xs, 35, params.at("ln.weight").to_doubles(),
                                     params.at("ln.bias").to_doubles(), 1e-5),
                    1e-5);
  th::require_close(e["plain1"], naive_layer_norm(xs, 5, {}, {}, 1e-5), 1e-5);
  th::require_close(e["plain2"], naive_layer_norm(xs, 35, {}, {}, 1e-3), 1e-5);
}

TEST_CASE("layer_norm on a single row (rank-1 input)", "[op][layer_norm]") {
  static constexpr auto one_row = model([](Builder& g) {
    auto x = input<"x", Shape<7>>(g);
    return sum<0>(layer_norm(x).named("y"));
  });
  const Array x = th::random_array(DType::f32, {7}, 8, -4, 4);
  th::require_close(evaluate_reference(one_row, {{"x", x}}, {})["y"],
                    naive_layer_norm(x.to_doubles(), 7, {}, {}, 1e-5), 1e-5);
}

TEST_CASE("layer_norm refuses a negative eps while the graph is built", "[op][layer_norm]") {
  Builder b;
  auto x = input<"x", Shape<3, 4>>(b);
  CHECK_THROWS_AS(layer_norm(x, -1e-5), GraphError);
}

// Gradients: a random weighting makes every output matter (sum(layer_norm(x)) alone has a
// zero x-gradient).
constexpr auto ln_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, dim>>(g);
  auto r = input<"r", Shape<rows, dim>>(g);
  auto w = param<Shape<dim>>(g / "ln", "weight", ParamOpts{Init::uniform, 0.5, 1.5, false});
  auto b = param<Shape<dim>>(g / "ln", "bias", ParamOpts{Init::uniform, -0.5, 0.5, false});
  return sum<0, 1>(layer_norm(x, w, b) * r) + sum<0, 1>(layer_norm(x, 0.1) * r);
});
constexpr auto ln_train = grad<ln_loss, "x">();
static_assert(ln_train.count(op::layer_norm_backward) == 2);

constexpr auto ln2_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, seq, 5>>(g);
  auto r = input<"r", Shape<rows, seq, 5>>(g);
  auto w = param<Shape<seq, 5>>(g / "ln", "weight", ParamOpts{Init::uniform, 0.5, 1.5, false});
  auto b = param<Shape<seq, 5>>(g / "ln", "bias", ParamOpts{Init::uniform, -0.5, 0.5, false});
  return sum<0, 1, 2>(layer_norm(x, w, b) * r);
});
constexpr auto ln2_train = grad<ln2_loss, "x">();

TEST_CASE("layer_norm on odd shapes and several bindings", "[op][layer_norm][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {11, 13}, {1, 2}};
  th::check_op({.what = "layer_norm [rows, dim] with weight [dim]",
                .forward = ln_loss,
                .train = ln_train,
                .inputs =
                    [&](int k) {
                      auto [r, d] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, d}, 60 + k, -3, 3)},
                                         {"r", th::random_array(DType::f32, {r, d}, 70 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("layer_norm over [seq, 5] on odd shapes", "[op][layer_norm][gradcheck]") {
  th::check_op({.what = "layer_norm [rows, seq, 5] with weight [seq, 5]",
                .forward = ln2_loss,
                .train = ln2_train,
                .inputs =
                    [](int k) {
                      const std::int64_t r = 3 + 2 * k, s = 7 - 2 * k;
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, s, 5}, 80 + k, -2, 2)},
                          {"r", th::random_array(DType::f32, {r, s, 5}, 90 + k)}};
                    },
                .bindings = 2});
}

}  // namespace

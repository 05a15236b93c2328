// rms_norm: hand-computed values, an all-zero row, [S, D] weights and the no-weight form,
// odd shapes and several symbol bindings through the op harness, and gradients of x and w.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto seq = sym<"seq">;
constexpr auto dim = sym<"dim">;

// An independent RMS norm over rows of n elements: x / sqrt(mean(x^2) + eps) * w.
std::vector<double> naive_rms_norm(const std::vector<double>& x, std::size_t n,
                                   const std::vector<double>& w, double eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    double ms = 0;
    for (std::size_t i = 0; i < n; ++i) ms += x[r * n + i] * x[r * n + i] / static_cast<double>(n);
    for (std::size_t i = 0; i < n; ++i)
      y[r * n + i] = x[r * n + i] / std::sqrt(ms + eps) * (w.empty() ? 1.0 : w[i]);
  }
  return y;
}

constexpr auto weighted = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 2>>(g);
  auto w = param<Shape<2>>(g / "norm", "weight", kOnes);
  auto y = rms_norm(x, w).named("y");
  static_assert(std::is_same_v<decltype(y), Tensor<Shape<rows, 2>, f32>>);
  return sum<0, 1>(y);
});
constexpr auto weighted_train = grad<weighted, "x">();
static_assert(weighted_train.count(op::rms_norm_backward) == 1);
static_assert(weighted_train.shape(weighted_train.output("grad/norm.weight")) == Shape<2>::value);

TEST_CASE("rms_norm matches hand-computed values", "[op][rms_norm]") {
  // Row 0 [3, 4]: mean square 12.5. Row 1 [0, 0]: y = 0, not NaN (eps inside the sqrt).
  const NamedArrays in{{"x", Array::from<float>({2, 2}, {3, 4, 0, 0})}};
  const NamedArrays params{{"norm.weight", Array::from<float>({2}, {2, -1})}};
  const Evaluation e = evaluate_reference(weighted_train, in, params);
  const double r = 1 / std::sqrt(12.5 + 1e-6);
  th::require_close(e["y"], {6 * r, -4 * r, 0, 0});
  // The loss is sum(y): dw = sum over rows of x * rstd = [3r, 4r] (the zero row adds 0).
  th::require_close(e["grad/norm.weight"], {3 * r, 4 * r});
  // dx_j = r * (w_j - xh_j * mean(w * xh)) with xh = [3r, 4r]: mean(w * xh) = (6r - 4r) / 2 = r.
  // For the zero row, dx = w / sqrt(eps).
  const double rz = 1 / std::sqrt(1e-6);
  th::require_close(e["grad/x"], {r * (2 - 3 * r * r), r * (-1 - 4 * r * r), 2 * rz, -rz}, 1e-3);
}

constexpr auto two_dims = model([](Builder& g) {
  auto x = input<"x", Shape<rows, seq, 5>>(g);
  auto w = param<Shape<seq, 5>>(g / "norm", "weight");
  auto plain = rms_norm(x, 1e-4).named("plain");
  return sum<0, 1, 2>(rms_norm(x, w).named("y") + plain);
});

TEST_CASE("rms_norm over two trailing dims and without a weight", "[op][rms_norm]") {
  const Array x = th::random_array(DType::f32, {3, 7, 5}, 15, -2, 3);
  const NamedArrays in{{"x", x}};
  NamedArrays params;
  init_params(two_dims, bind_symbols(two_dims, in, nullptr), params, 6);
  const Evaluation e = evaluate_reference(two_dims, in, params);
  const std::vector<double> xs = x.to_doubles();
  th::require_close(e["y"], naive_rms_norm(xs, 35, params.at("norm.weight").to_doubles(), 1e-6),
                    1e-5);
  th::require_close(e["plain"], naive_rms_norm(xs, 5, {}, 1e-4), 1e-5);
}

constexpr auto rms_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, dim>>(g);
  auto r = input<"r", Shape<rows, dim>>(g);
  auto w = param<Shape<dim>>(g / "norm", "weight", ParamOpts{Init::uniform, 0.5, 1.5, false});
  return sum<0, 1>(rms_norm(x, w) * r) + sum<0, 1>(rms_norm(x, 0.01) * r);
});
constexpr auto rms_train = grad<rms_loss, "x">();

constexpr auto rms2_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, seq, 5>>(g);
  auto r = input<"r", Shape<rows, seq, 5>>(g);
  auto w = param<Shape<seq, 5>>(g / "norm", "weight", ParamOpts{Init::uniform, -1.5, 1.5, false});
  return sum<0, 1, 2>(rms_norm(x, w) * r);
});
constexpr auto rms2_train = grad<rms2_loss, "x">();

TEST_CASE("rms_norm on odd shapes and several bindings", "[op][rms_norm][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {11, 13}, {1, 1}};
  th::check_op({.what = "rms_norm [rows, dim] with weight [dim]",
                .forward = rms_loss,
                .train = rms_train,
                .inputs =
                    [&](int k) {
                      auto [r, d] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, d}, 160 + k, -3, 3)},
                          {"r", th::random_array(DType::f32, {r, d}, 170 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("rms_norm over [seq, 5] on odd shapes", "[op][rms_norm][gradcheck]") {
  th::check_op({.what = "rms_norm [rows, seq, 5] with weight [seq, 5]",
                .forward = rms2_loss,
                .train = rms2_train,
                .inputs =
                    [](int k) {
                      const std::int64_t r = 3 + 2 * k, s = 7 - 2 * k;
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, s, 5}, 180 + k, -2, 2)},
                          {"r", th::random_array(DType::f32, {r, s, 5}, 190 + k)}};
                    },
                .bindings = 2});
}

}  // namespace

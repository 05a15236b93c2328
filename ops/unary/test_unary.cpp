// The unary ops and unary_backward: forward values and derivatives against formulas written
// differently from math.hpp (erfc instead of erf, tanh identities, powers), integer neg/abs,
// NaN propagation, and a gradient check with one input per op so a failure names the op.
#include <cmath>
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto n = sym<"n">;

// Independent formulas: sigmoid from tanh, the normal CDF from erfc, gelu_tanh as published.
double sigmoid_ref(double x) {
  return 0.5 * (1 + std::tanh(x / 2));
}
double phi_cdf(double x) {
  return 0.5 * std::erfc(-x / std::sqrt(2.0));
}
double phi_pdf(double x) {
  return std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
}
double gelu_tanh_u(double x) {
  return std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
}
double sech2(double u) {
  return 1 / (std::cosh(u) * std::cosh(u));
}

// `x` takes any sign (kept away from the kinks of relu and abs at 0); `p` is positive.
constexpr auto unary_values = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto p = input<"p", Shape<n>>(g);
  neg(x).named("y_neg");
  (-x).named("y_minus");
  exp(x).named("y_exp");
  log(p).named("y_log");
  sqrt(p).named("y_sqrt");
  rsqrt(p).named("y_rsqrt");
  pow_scalar(x, 3).named("y_cube");
  pow_scalar(p, 0.5).named("y_pow_half");
  pow_scalar(p, -1.5).named("y_pow_neg");
  abs(x).named("y_abs");
  relu(x).named("y_relu");
  gelu(x).named("y_gelu");
  gelu_tanh(x).named("y_gelu_tanh");
  silu(x).named("y_silu");
  sigmoid(x).named("y_sigmoid");
  return tanh(x).named("y_tanh");
});

using Formula = double (*)(double);
struct Case {
  const char* node;
  bool positive;  // reads p instead of x
  Formula f;
};
const Case kCases[] = {
    {"y_neg", false, [](double x) { return -x; }},
    {"y_minus", false, [](double x) { return -x; }},
    {"y_exp", false, [](double x) { return std::pow(M_E, x); }},
    {"y_log", true, [](double p) { return std::log2(p) * M_LN2; }},
    {"y_sqrt", true, [](double p) { return std::pow(p, 0.5); }},
    {"y_rsqrt", true, [](double p) { return std::pow(p, -0.5); }},
    {"y_cube", false, [](double x) { return x * x * x; }},
    {"y_pow_half", true, [](double p) { return std::sqrt(p); }},
    {"y_pow_neg", true, [](double p) { return 1 / (p * std::sqrt(p)); }},
    {"y_abs", false, [](double x) { return x < 0 ? -x : x; }},
    {"y_relu", false, [](double x) { return x > 0 ? x : 0.0; }},
    {"y_gelu", false, [](double x) { return x * phi_cdf(x); }},
    {"y_gelu_tanh", false, [](double x) { return 0.5 * x * (1 + std::tanh(gelu_tanh_u(x))); }},
    {"y_silu", false, [](double x) { return x * sigmoid_ref(x); }},
    {"y_sigmoid", false, sigmoid_ref},
    {"y_tanh", false, [](double x) { return 2 * sigmoid_ref(2 * x) - 1; }},
};

// Uniform in [-2, 2] with |v| >= 0.1 (no kink of relu or abs within a difference step).
Array signed_values(std::vector<std::int64_t> dims, std::uint64_t seed) {
  Array a = th::random_array(DType::f32, std::move(dims), seed, -1.9, 1.9);
  for (std::int64_t i = 0; i < a.numel(); ++i) a.set(i, a.at(i) + (a.at(i) < 0 ? -0.1 : 0.1));
  return a;
}

// |got - want| <= rtol * max(1, |want|) everywhere: f32 results of values up to ~50.
void require_rel(const Array& got, const std::vector<double>& want, double rtol) {
  REQUIRE(got.numel() == static_cast<std::int64_t>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i << ": got " << got.at(static_cast<std::int64_t>(i)) << ", want "
                    << want[i]);
    REQUIRE(std::abs(got.at(static_cast<std::int64_t>(i)) - want[i]) <=
            rtol * std::max(1.0, std::abs(want[i])));
  }
}

void check_cases(const Evaluation& e, const Array& x, const Array& p, double rtol) {
  for (const Case& c : kCases) {
    INFO(c.node);
    const Array& in = c.positive ? p : x;
    std::vector<double> want;
    for (std::int64_t i = 0; i < in.numel(); ++i) want.push_back(c.f(in.at(i)));
    require_rel(e[c.node], want, rtol);
  }
}

TEST_CASE("unary ops match independent formulas on odd lengths", "[op][unary]") {
  for (std::int64_t len : {5, 11, 13}) {
    INFO("n = " << len);
    const Array x = signed_values({len}, 1 + len);
    const Array p = th::random_array(DType::f32, {len}, 2 + len, 0.25, 3);
    const Evaluation e = evaluate_reference(unary_values, {{"x", x}, {"p", p}}, {});
    check_cases(e, x, p, 1e-6);  // f32 results: a few ulps
  }
}

TEST_CASE("unary ops at well-known points", "[op][unary]") {
  const Array x = Array::from<float>({5}, {-1, 0, 1, 2, -3});
  const Array p = Array::from<float>({5}, {1, 4, 0.25, 16, 1});
  const Evaluation e = evaluate_reference(unary_values, {{"x", x}, {"p", p}}, {});
  // Phi(1) = 0.8413447460685429 (normal table), so gelu(1) = Phi(1), gelu(-1) = Phi(1) - 1.
  th::require_close(e["y_gelu"],
                    {0.8413447460685429 - 1, 0, 0.8413447460685429, 2 * 0.9772498680518208,
                     -3 * (1 - 0.9986501019683699)},
                    1e-6);
  th::require_close(e["y_relu"], {0, 0, 1, 2, 0}, 0);
  th::require_close(e["y_abs"], {1, 0, 1, 2, 3}, 0);
  CHECK(e["y_sigmoid"].at(1) == 0.5);
  CHECK(e["y_tanh"].at(1) == 0.0);
  CHECK(e["y_exp"].at(1) == 1.0);
  CHECK(e["y_silu"].at(1) == 0.0);
  th::require_close(e["y_log"], {0, 2 * M_LN2, -2 * M_LN2, 4 * M_LN2, 0}, 1e-6);
  th::require_close(e["y_sqrt"], {1, 2, 0.5, 4, 1}, 0);
  th::require_close(e["y_rsqrt"], {1, 0.5, 2, 0.25, 1}, 0);
  th::require_close(e["y_pow_neg"], {1, 0.125, 8, 1 / 64.0, 1}, 1e-7);
  th::require_close(e["y_cube"], {-1, 0, 1, 8, -27}, 0);
}

// NaN goes through every op as NaN (a NaN that relu turned into 0 would hide a divergence).
TEST_CASE("unary ops propagate NaN", "[op][unary]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Evaluation e = evaluate_reference(
      unary_values, {{"x", Array::from<float>({1}, {nan})}, {"p", Array::from<float>({1}, {nan})}},
      {});
  for (const Case& c : kCases) {
    INFO(c.node);
    CHECK(std::isnan(e[c.node].at(0)));
  }
}

constexpr auto on_scalar = model([](Builder& g) {
  auto s = input<"s", Shape<>>(g);
  return (exp(s) + tanh(s)).named("y");
});

TEST_CASE("unary ops on a [] scalar", "[op][unary]") {
  const Evaluation e = evaluate_reference(on_scalar, {{"s", Array::from<float>({}, {0.5f})}}, {});
  CHECK(e["y"].dims().empty());
  th::require_close(e["y"], {std::pow(M_E, 0.5) + 2 * sigmoid_ref(1.0) - 1}, 1e-6);
}

constexpr auto int_unary = model([](Builder& g) {
  auto i = input<"i", Shape<n>, i32>(g);
  auto l = input<"l", Shape<n>, i64>(g);
  neg(i).named("neg_i");
  abs(i).named("abs_i");
  neg(l).named("neg_l");
  return abs(l).named("abs_l");
});
static_assert(
    std::is_same_v<decltype(neg(std::declval<Tensor<Shape<n>, i32>>())), Tensor<Shape<n>, i32>>);

TEST_CASE("neg and abs on integers: exact, wrapping like PyTorch at the minimum", "[op][unary]") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::int64_t big = (std::int64_t{1} << 53) + 1;  // not representable as a double
  const std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();
  const NamedArrays in{{"i", Array::from<std::int32_t>({5}, {3, -7, 0, kMax, kMin})},
                       {"l", Array::from<std::int64_t>({5}, {big, -big, 0, -1, kMin64})}};
  const Evaluation e = evaluate_reference(int_unary, in, {});
  th::require_close(e["neg_i"], {-3, 7, 0, -kMax, kMin}, 0);
  th::require_close(e["abs_i"], {3, 7, 0, kMax, kMin}, 0);
  const std::int64_t* nl = e["neg_l"].data<std::int64_t>();
  const std::int64_t* al = e["abs_l"].data<std::int64_t>();
  CHECK(nl[0] == -big);
  CHECK(nl[1] == big);
  CHECK(nl[3] == 1);
  CHECK(nl[4] == kMin64);
  CHECK(al[0] == big);
  CHECK(al[1] == big);
  CHECK(al[4] == kMin64);
  CHECK(e["neg_i"].dtype() == DType::i32);
}

// unary_backward directly: g times the derivative, against closed forms written here.
constexpr auto derivatives = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto p = input<"p", Shape<n>>(g);
  auto gy = input<"g", Shape<n>>(g);
  auto d = [&](OpId op, auto in, auto y, double f0, std::string_view name) {
    Tensor<Shape<n>>{&g, unary_backward(op, in.ref(), y.ref(), gy.ref(), f0).id}.named(name);
  };
  d(OpId::exp, x, exp(x), 0, "d_exp");
  d(OpId::log, p, log(p), 0, "d_log");
  d(OpId::sqrt, p, sqrt(p), 0, "d_sqrt");
  d(OpId::rsqrt, p, rsqrt(p), 0, "d_rsqrt");
  d(OpId::pow_scalar, x, pow_scalar(x, 3), 3, "d_cube");
  d(OpId::pow_scalar, p, pow_scalar(p, -1.5), -1.5, "d_pow_neg");
  d(OpId::abs, x, abs(x), 0, "d_abs");
  d(OpId::relu, x, relu(x), 0, "d_relu");
  d(OpId::gelu, x, gelu(x), 0, "d_gelu");
  d(OpId::gelu_tanh, x, gelu_tanh(x), 0, "d_gelu_tanh");
  d(OpId::silu, x, silu(x), 0, "d_silu");
  d(OpId::sigmoid, x, sigmoid(x), 0, "d_sigmoid");
  d(OpId::tanh, x, tanh(x), 0, "d_tanh");
  return sum<0>(x);
});

TEST_CASE("unary_backward is g times the derivative", "[op][unary]") {
  const std::int64_t len = 13;
  const Array x = signed_values({len}, 5);
  const Array p = th::random_array(DType::f32, {len}, 6, 0.25, 3);
  const Array gy = th::random_array(DType::f32, {len}, 7, -2, 2);
  const Evaluation e = evaluate_reference(derivatives, {{"x", x}, {"p", p}, {"g", gy}}, {});
  const struct {
    const char* node;
    bool positive;
    Formula d;
  } cases[] = {
      {"d_exp", false, [](double v) { return std::pow(M_E, v); }},
      {"d_log", true, [](double v) { return 1 / v; }},
      {"d_sqrt", true, [](double v) { return 0.5 / std::pow(v, 0.5); }},
      {"d_rsqrt", true, [](double v) { return -0.5 / (v * std::sqrt(v)); }},
      {"d_cube", false, [](double v) { return 3 * v * v; }},
      {"d_pow_neg", true, [](double v) { return -1.5 / (v * v * std::sqrt(v)); }},
      {"d_abs", false, [](double v) { return v < 0 ? -1.0 : 1.0; }},
      {"d_relu", false, [](double v) { return v > 0 ? 1.0 : 0.0; }},
      {"d_gelu", false, [](double v) { return phi_cdf(v) + v * phi_pdf(v); }},
      {"d_gelu_tanh", false,
       [](double v) {
         const double u = gelu_tanh_u(v);
         return 0.5 * (1 + std::tanh(u)) +
                0.5 * v * sech2(u) * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * v * v);
       }},
      {"d_silu", false,
       [](double v) { return sigmoid_ref(v) + v * sigmoid_ref(v) * sigmoid_ref(-v); }},
      {"d_sigmoid", false, [](double v) { return sigmoid_ref(v) * sigmoid_ref(-v); }},
      {"d_tanh", false, sech2},
  };
  for (const auto& c : cases) {
    INFO(c.node);
    const Array& in = c.positive ? p : x;
    std::vector<double> want;
    for (std::int64_t i = 0; i < len; ++i) want.push_back(gy.at(i) * c.d(in.at(i)));
    require_rel(e[c.node], want, 1e-6);
  }
}

// One input per op, so that the gradient check's report names the op whose VJP is wrong.
constexpr auto unary_loss = model([](Builder& g) {
  auto w = input<"w", Shape<n>>(g);
  auto f = [&]<fixed_string Name>(auto op) { return sum<0>(op(input<Name, Shape<n>>(g)) * w); };
  return f.template operator()<"neg">([](auto v) { return -v; }) +
         f.template operator()<"exp">([](auto v) { return exp(v); }) +
         f.template operator()<"log">([](auto v) { return log(v); }) +
         f.template operator()<"sqrt">([](auto v) { return sqrt(v); }) +
         f.template operator()<"rsqrt">([](auto v) { return rsqrt(v); }) +
         f.template operator()<"cube">([](auto v) { return pow_scalar(v, 3); }) +
         f.template operator()<"pow_frac">([](auto v) { return pow_scalar(v, -1.5); }) +
         f.template operator()<"abs">([](auto v) { return abs(v); }) +
         f.template operator()<"relu">([](auto v) { return relu(v); }) +
         f.template operator()<"gelu">([](auto v) { return gelu(v); }) +
         f.template operator()<"gelu_tanh">([](auto v) { return gelu_tanh(v); }) +
         f.template operator()<"silu">([](auto v) { return silu(v); }) +
         f.template operator()<"sigmoid">([](auto v) { return sigmoid(v); }) +
         f.template operator()<"tanh">([](auto v) { return tanh(v); });
});
constexpr auto unary_train =
    grad<unary_loss, "neg", "exp", "log", "sqrt", "rsqrt", "cube", "pow_frac", "abs", "relu",
         "gelu", "gelu_tanh", "silu", "sigmoid", "tanh">();
static_assert(unary_train.count(op::unary_backward) == 13);  // every op but neg

TEST_CASE("unary ops: gradients on odd lengths", "[op][unary][gradcheck]") {
  const std::int64_t lens[] = {5, 11, 13};
  th::check_op({.what = "unary ops",
                .forward = unary_loss,
                .train = unary_train,
                .inputs =
                    [&](int k) {
                      const std::int64_t len = lens[k];
                      NamedArrays in{{"w", th::random_array(DType::f32, {len}, 100 + k)}};
                      std::uint64_t seed = 200 + 20 * static_cast<std::uint64_t>(k);
                      for (const char* name : {"neg", "exp", "cube", "abs", "relu", "gelu",
                                               "gelu_tanh", "silu", "sigmoid", "tanh"})
                        in[name] = signed_values({len}, seed++);
                      for (const char* name : {"log", "sqrt", "rsqrt", "pow_frac"})
                        in[name] = th::random_array(DType::f32, {len}, seed++, 0.25, 3);
                      return in;
                    },
                .bindings = 3});
}

}  // namespace

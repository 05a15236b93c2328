// The piecewise ops elu, floor, clamp and mod: values against formulas written differently from
// math.hpp, hand examples (torch.remainder's sign rule, integer mod and floor division), NaN,
// the graph-building refusals, clamp's gradient at its bounds on every backend, and a gradient
// check with inputs kept away from the kinks.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto n = sym<"n">;

constexpr auto piecewise = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  elu(x).named("elu");
  elu(x, 0.5).named("elu_half");
  floor(x).named("floor");
  clamp(x, -0.75, 1.25).named("clamp");
  mod(x, 2.5).named("mod");
  return mod(x, -0.75).named("mod_neg");
});

// Independent formulas: exp(x) - 1 instead of expm1, floor by truncation, clamp by min/max,
// remainder by x - floor(x / m) * m in double.
double elu_ref(double x, double alpha) {
  return x > 0 ? x : alpha * (std::exp(x) - 1);
}
double floor_ref(double x) {
  const double t = static_cast<double>(static_cast<long long>(x));
  return t > x ? t - 1 : t;
}
double remainder_ref(double x, double m) {
  return x - std::floor(x / m) * m;
}

// Values in [-3, 3] at least 0.05 from every kink the ops have: 0 (elu), whole numbers (floor),
// the clamp bounds, and the multiples of 2.5 and 0.75 (mod).
Array away_from_kinks(std::vector<std::int64_t> dims, std::uint64_t seed) {
  Array a = th::random_array(DType::f32, std::move(dims), seed, -3, 3);
  auto near = [](double v, double step) {
    const double r = remainder_ref(v, step);
    return r < 0.05 || r > step - 0.05;
  };
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    double v = a.at(i);
    for (int tries = 0; tries < 40 && (near(v, 1) || near(v, 2.5) || near(v, 0.75) ||
                                       std::abs(v + 0.75) < 0.05 || std::abs(v - 1.25) < 0.05);
         ++tries)
      v += 0.0173;
    a.set(i, v);
  }
  return a;
}

TEST_CASE("elu, floor, clamp, mod match independent formulas on odd lengths", "[op][piecewise]") {
  for (std::int64_t len : {5, 11, 13}) {
    INFO("n = " << len);
    const Array x = away_from_kinks({len}, 3 + len);
    const Evaluation e = evaluate_reference(piecewise, {{"x", x}}, {});
    std::vector<double> elu1, elu_half, fl, cl, m1, m2;
    for (std::int64_t i = 0; i < len; ++i) {
      const double v = x.at(i);
      elu1.push_back(elu_ref(v, 1));
      elu_half.push_back(elu_ref(v, 0.5));
      fl.push_back(floor_ref(v));
      cl.push_back(std::min(std::max(v, -0.75), 1.25));
      m1.push_back(remainder_ref(v, 2.5));
      m2.push_back(remainder_ref(v, -0.75));
    }
    th::require_close(e["elu"], elu1, 1e-6);
    th::require_close(e["elu_half"], elu_half, 1e-6);
    th::require_close(e["floor"], fl, 0);
    th::require_close(e["clamp"], cl, 0);
    th::require_close(e["mod"], m1, 1e-6);
    th::require_close(e["mod_neg"], m2, 1e-6);
  }
}

TEST_CASE("piecewise ops at hand-picked points (remainder has the sign of m)", "[op][piecewise]") {
  const Array x = Array::from<float>({7}, {-7, 7, -5.5f, 5.5f, 0, 1.25f, -0.5f});
  const Evaluation e = evaluate_reference(piecewise, {{"x", x}}, {});
  th::require_close(e["floor"], {-7, 7, -6, 5, 0, 1, -1}, 0);
  th::require_close(e["clamp"], {-0.75, 1.25, -0.75, 1.25, 0, 1.25, -0.5}, 0);
  // torch.remainder(-7, 2.5) = 0.5, (7, 2.5) = 2, (-5.5, 2.5) = 2, (5.5, 2.5) = 0.5.
  th::require_close(e["mod"], {0.5, 2, 2, 0.5, 0, 1.25, 2}, 1e-6);
  // torch.remainder(x, -0.75): results in (-0.75, 0].
  th::require_close(e["mod_neg"], {-0.25, -0.5, -0.25, -0.5, 0, -0.25, -0.5}, 1e-6);
  // elu(-1) = e^-1 - 1; elu(-0.5, 0.5) = 0.5 (e^-0.5 - 1).
  CHECK(e["elu"].at(6) == Approx(0.6065306597126334 - 1).epsilon(1e-6));
  CHECK(e["elu"].at(5) == 1.25);
  CHECK(e["elu_half"].at(6) == Approx(0.5 * (0.6065306597126334 - 1)).epsilon(1e-6));
}

TEST_CASE("piecewise ops propagate NaN", "[op][piecewise]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Evaluation e = evaluate_reference(piecewise, {{"x", Array::from<float>({1}, {nan})}}, {});
  for (const char* node : {"elu", "elu_half", "floor", "clamp", "mod", "mod_neg"}) {
    INFO(node);
    CHECK(std::isnan(e[node].at(0)));
  }
}

constexpr auto int_mod = model([](Builder& g) {
  auto i = input<"i", Shape<n>, i32>(g);
  auto l = input<"l", Shape<n>, i64>(g);
  mod(i, 7).named("i_mod7");
  mod(i, -7).named("i_mod_neg7");
  mod(i, -1).named("i_mod_neg1");
  ((i - mod(i, 4)) / 4.0).named("i_floordiv4");
  return mod(l, 5).named("l_mod5");
});
static_assert(
    std::is_same_v<decltype(mod(std::declval<Tensor<Shape<n>, i32>>(), 3)), Tensor<Shape<n>, i32>>);

TEST_CASE("mod on integers: exact, sign of m, floor division from it", "[op][piecewise]") {
  constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
  const std::int64_t big = (std::int64_t{1} << 53) + 3;  // not a double: exact integer path
  const NamedArrays in{{"i", Array::from<std::int32_t>({6}, {-7, 7, 13, -13, 0, kMin})},
                       {"l", Array::from<std::int64_t>({6}, {big, -big, 4, -4, 0, 5})}};
  const Evaluation e = evaluate_reference(int_mod, in, {});
  // Python: [-7 % 7, 7 % 7, 13 % 7, -13 % 7, 0 % 7, -2**31 % 7] = [0, 0, 6, 1, 0, 5].
  th::require_close(e["i_mod7"], {0, 0, 6, 1, 0, 5}, 0);
  // Python: x % -7 = [0, 0, -1, -6, 0, -2].
  th::require_close(e["i_mod_neg7"], {0, 0, -1, -6, 0, -2}, 0);
  th::require_close(e["i_mod_neg1"], {0, 0, 0, 0, 0, 0}, 0);
  // Python: x // 4 = [-2, 1, 3, -4, 0, -2**29].
  th::require_close(e["i_floordiv4"], {-2, 1, 3, -4, 0, -536870912}, 0);
  const std::int64_t* l = e["l_mod5"].data<std::int64_t>();
  // 2^53 + 3 = 9007199254740995; Python: 9007199254740995 % 5 = 0, -9007199254740995 % 5 = 0.
  CHECK(l[0] == 0);
  CHECK(l[1] == 0);
  CHECK(l[2] == 4);
  CHECK(l[3] == 1);
  CHECK(l[5] == 0);
  CHECK(e["i_mod7"].dtype() == DType::i32);
}

TEST_CASE("clamp and integer mod refuse bad scalars while the graph is built", "[op][piecewise]") {
  Builder b;
  auto x = input<"x", Shape<3>>(b);
  auto i = input<"i", Shape<3>, i32>(b);
  CHECK_THROWS_AS(clamp(x, 1.0, -1.0), GraphError);
  CHECK_THROWS_AS(clamp(x, std::nan(""), 1.0), GraphError);
  CHECK_THROWS_AS(mod(i, 0), GraphError);
  CHECK_THROWS_AS(mod(i, 2.5), GraphError);
  CHECK_THROWS_AS(mod(i, 3e9), GraphError);
  CHECK_NOTHROW(mod(x, 0.0));  // float remainder by 0 is NaN at run time, as in PyTorch
}

// The CPU kernel of mod takes a fast double-precision path where it is provably exact and the
// fmod form elsewhere: its results must equal the reference's bit for bit (zero signs included)
// over magnitudes from subnormal to huge, exact multiples, zeros, infinities and NaN.
constexpr auto mod_many = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  mod(x, 2.5).output("m_2.5");
  mod(x, -0.75).output("m_-0.75");
  mod(x, 3e-30).output("m_tiny");
  mod(x, -7e30).output("m_huge");
  mod(x, 0.0).output("m_zero");
  mod(x, 1.0).output("m_one");
  return sum<0>(x);
});

TEST_CASE("mod: the CPU kernel equals the reference bit for bit over every magnitude",
          "[op][piecewise]") {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          2.5f,
                          -2.5f,
                          5.0f,
                          -7.5f,
                          0.75f,
                          -1.5f,
                          1e-38f,
                          -1e-45f,
                          3e-30f,
                          -6e-30f,
                          7e30f,
                          -1.4e31f,
                          3e38f,
                          -3e38f,
                          1.0f,
                          -1.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          -1e-9f,
                          1e-9f};
  for (int i = 0; i < 3000; ++i) {  // random signs, mantissas and exponents 2^-140 .. 2^120
    const double u = random::uniform(5, 6, 7, static_cast<std::uint64_t>(i));
    const double e = random::uniform(5, 6, 8, static_cast<std::uint64_t>(i));
    v.push_back(static_cast<float>((u < 0.5 ? -1 : 1) * (1 + u) * std::exp2(-140 + 260 * e)));
  }
  const auto len = static_cast<std::int64_t>(v.size());
  Array x(DType::f32, {len});
  std::memcpy(x.data<float>(), v.data(), v.size() * sizeof(float));
  const NamedArrays in{{"x", x}};
  const Evaluation ref = evaluate_reference(mod_many, in, {});
  for (const th::Backend& be : th::backends()) {
    INFO("backend " << be.name);
    if (th::skips(be, mod_many)) continue;
    for (const auto& [node, value] : be.run(mod_many, in, {}, {})) {
      if (node == mod_many.result) continue;
      INFO(GraphView(mod_many).name(node));
      const float* got = value.data<float>();
      const float* want = ref.node(node).data<float>();
      int differ = 0;
      for (std::int64_t i = 0; i < len; ++i) {
        const bool same = std::isnan(got[i]) ? std::isnan(want[i])
                                             : std::memcmp(&got[i], &want[i], sizeof(float)) == 0;
        if (!same && differ++ < 3)
          UNSCOPED_INFO("x = " << v[static_cast<std::size_t>(i)] << ": got " << got[i] << ", want "
                               << want[i]);
      }
      CHECK(differ == 0);
    }
  }
}

// clamp's gradient includes its bounds (PyTorch's rule), on the reference and every backend.
constexpr auto clamp_loss = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto w = input<"w", Shape<n>>(g);
  return sum<0>(clamp(x, -0.5, 0.5) * w);
});
constexpr auto clamp_train = grad<clamp_loss, "x">();

TEST_CASE("clamp passes the gradient at its bounds and none outside", "[op][piecewise]") {
  const NamedArrays in{{"x", Array::from<float>({5}, {-0.75f, -0.5f, 0.25f, 0.5f, 0.75f})},
                       {"w", Array::from<float>({5}, {1, 2, 3, 4, 5})}};
  const std::vector<double> want = {0, 2, 3, 4, 0};
  const int gx = clamp_train.output("grad/x");
  th::require_close(evaluate_reference(clamp_train, in, {}).node(gx), want, 0);
  for (const th::Backend& be : th::backends()) {
    INFO("backend " << be.name);
    if (th::skips(be, clamp_train)) continue;
    bool seen = false;
    for (const auto& [node, value] : be.run(clamp_train, in, {}, {}))
      if (node == gx) {
        th::require_close(value, want, 0);
        seen = true;
      }
    CHECK(seen);
  }
}

// One input per op (a failure names the op); every op's output is also a graph output so that
// each backend's forward kernel is compared with the reference elementwise.
constexpr auto piecewise_loss = model([](Builder& g) {
  auto w = input<"w", Shape<n>>(g);
  auto a = input<"elu", Shape<n>>(g);
  auto b = input<"elu_alpha", Shape<n>>(g);
  auto c = input<"floor", Shape<n>>(g);
  auto d = input<"clamp", Shape<n>>(g);
  auto e = input<"mod", Shape<n>>(g);
  auto y = elu(a).output("y_elu") + elu(b, 1.7).output("y_elu_alpha") +
           floor(c).output("y_floor") * c + clamp(d, -0.75, 1.25).output("y_clamp") +
           mod(e, 2.5).output("y_mod") * mod(e, -0.75).output("y_mod_neg");
  return sum<0>(y * w);
});
constexpr auto piecewise_train =
    grad<piecewise_loss, "elu", "elu_alpha", "floor", "clamp", "mod">();
static_assert(piecewise_train.count(op::unary_backward) == 3);  // elu twice, clamp

TEST_CASE("piecewise ops: gradients away from the kinks, every backend",
          "[op][piecewise][gradcheck]") {
  const std::int64_t lens[] = {5, 11, 13};
  th::check_op({.what = "elu, floor, clamp, mod",
                .forward = piecewise_loss,
                .train = piecewise_train,
                .inputs =
                    [&](int k) {
                      const std::int64_t len = lens[k];
                      NamedArrays in{{"w", th::random_array(DType::f32, {len}, 300 + k)}};
                      std::uint64_t seed = 400 + 10 * static_cast<std::uint64_t>(k);
                      for (const char* name : {"elu", "elu_alpha", "floor", "clamp", "mod"})
                        in[name] = away_from_kinks({len}, seed++);
                      return in;
                    },
                .bindings = 3});
}

}  // namespace

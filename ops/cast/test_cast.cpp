// cast: bf16 round-to-nearest-even worked out bit by bit (ties, subnormals, overflow, NaN,
// and single rounding from f64), float -> int truncation with saturation and NaN -> 0,
// int -> float rounding (incl. i64 beyond 2^53), bool in and out, and gradients through
// float casts (none through integer ones) in the op harness.
#include <cmath>
#include <cstdint>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto n = sym<"n">;

static_assert(std::is_same_v<decltype(cast<f32>(std::declval<Tensor<Shape<n, 3>, boolean>>())),
                             Tensor<Shape<n, 3>, f32>>);
static_assert(
    std::is_same_v<decltype(cast<bf16>(std::declval<Tensor<Shape<>>>())), Tensor<Shape<>, bf16>>);

constexpr auto to_bf16 = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto d = input<"d", Shape<n>, f64>(g);
  cast<bf16>(d).named("d_bf16");
  return cast<bf16>(x).named("x_bf16");
});

const double p = std::ldexp(1.0, -8);  // half a bf16 ulp at 1 (bf16 keeps 7 fraction bits)
const double inf = std::numeric_limits<double>::infinity();
const double nan = std::numeric_limits<double>::quiet_NaN();

Array from_doubles(DType t, const std::vector<double>& v) {
  Array a(t, {static_cast<std::int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) a.set(static_cast<std::int64_t>(i), v[i]);
  return a;
}

// Compares bit-for-bit in meaning: NaN matches NaN, and the sign of zero must match.
void require_same(const Array& got, const std::vector<double>& want) {
  REQUIRE(got.numel() == static_cast<std::int64_t>(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = got.at(static_cast<std::int64_t>(i));
    INFO("element " << i << ": got " << g << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(g));
    } else {
      CHECK(g == want[i]);
      CHECK(std::signbit(g) == std::signbit(want[i]));
    }
  }
}

TEST_CASE("f32 -> bf16 rounds to nearest, ties to even", "[op][cast]") {
  const double fmax = std::numeric_limits<float>::max();
  const std::vector<double> x = {1.0,
                                 1 + p,      // tie: 1 (even) wins over 1 + 2p
                                 1 + 3 * p,  // tie: 1 + 4p (even) wins over 1 + 2p
                                 1 + p + std::ldexp(1.0, -20),     // above the tie
                                 -(1 + p + std::ldexp(1.0, -20)),  // the same, negative
                                 3.140625,                         // exact in bf16: 1.1001001b * 2
                                 static_cast<float>(M_PI),         // 3.1415927 -> 3.140625
                                 fmax,                             // above the largest bf16: inf
                                 -0.0,
                                 -inf,
                                 nan,
                                 3 * std::ldexp(1.0, -135),  // 0.75 of the smallest subnormal: up
                                 std::ldexp(1.0, -134)};     // half of it: tie, to 0 (even)
  const std::vector<double> want = {
      1.0, 1.0,  1 + 4 * p, 1 + 2 * p, -(1 + 2 * p),          3.140625, 3.140625,
      inf, -0.0, -inf,      nan,       std::ldexp(1.0, -133), 0.0};
  const Evaluation e = evaluate_reference(
      to_bf16, {{"x", from_doubles(DType::f32, x)}, {"d", Array(DType::f64, {13})}}, {});
  CHECK(e["x_bf16"].dtype() == DType::bf16);
  require_same(e["x_bf16"], want);
}

// The CPU kernel (an own vectorised loop for f32 <-> bf16) against the reference, bit for bit:
// the edge cases above, at the start and the end of an array long enough to be split into
// parallel blocks, around random values of every magnitude.
constexpr auto round_trip = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto h = cast<bf16>(x).named("h");
  return cast<f32>(h).named("back");
});

TEST_CASE("the CPU kernels convert f32 <-> bf16 bit for bit as the reference does", "[op][cast]") {
  const std::vector<double> edge = {1 + p,
                                    1 + 3 * p,
                                    -(1 + p + std::ldexp(1.0, -20)),
                                    std::numeric_limits<float>::max(),
                                    -0.0,
                                    -inf,
                                    inf,
                                    nan,
                                    -nan,
                                    3 * std::ldexp(1.0, -135),
                                    std::ldexp(1.0, -134),
                                    std::ldexp(1.0, -149),
                                    65504.0,
                                    1e-30};
  const std::int64_t len = 3 * (1 << 15) + 7;  // three full blocks and a tail
  Array x = th::random_array(DType::f32, {len}, 41, -1, 1);
  for (std::int64_t i = 0; i < len; ++i)
    x.set(i, x.at(i) * std::ldexp(1.0, static_cast<int>(i % 61) - 30));
  for (std::size_t i = 0; i < edge.size(); ++i) {
    x.set(static_cast<std::int64_t>(i), edge[i]);
    x.set(len - 1 - static_cast<std::int64_t>(i), edge[i]);
  }
  Session s(round_trip, {.threads = 2, .keep = {"h"}});
  s.set_inputs({{"x", x}});
  s.run();
  const std::string kernels = s.describe_kernels();
  CHECK(kernels.find("own cast (f32 to bf16)") != std::string::npos);
  CHECK(kernels.find("own cast (bf16 to f32)") != std::string::npos);
  const Evaluation e = evaluate_reference(round_trip, {{"x", x}}, {});
  for (const char* name : {"h", "back"}) {
    INFO(name);
    const Array& got = s.get(name);
    const Array& want = e[name];
    REQUIRE(got.bytes() == want.bytes());
    std::int64_t differ = 0;
    const auto* g = static_cast<const unsigned char*>(got.raw());
    const auto* w = static_cast<const unsigned char*>(want.raw());
    for (std::size_t i = 0; i < got.bytes(); ++i) differ += g[i] != w[i];
    CHECK(differ == 0);
  }
}

TEST_CASE("f64 -> bf16 rounds once, not through f32", "[op][cast]") {
  const double tiny = std::ldexp(1.0, -30);  // below f32 precision at 1
  // Through f32, 1 + p + tiny would become the tie 1 + p and then 1; rounded once it is above
  // the tie. Likewise 1 + 3p - tiny would become the tie 1 + 3p and then 1 + 4p.
  const std::vector<double> d = {1 + p + tiny, 1 + 3 * p - tiny, 1 + p, -(1 + p + tiny),
                                 1 + p - tiny};
  const std::vector<double> want = {1 + 2 * p, 1 + 2 * p, 1.0, -(1 + 2 * p), 1.0};
  const Evaluation e = evaluate_reference(
      to_bf16, {{"x", Array(DType::f32, {5})}, {"d", from_doubles(DType::f64, d)}}, {});
  require_same(e["d_bf16"], want);
}

constexpr auto to_int = model([](Builder& g) {
  auto x = input<"x", Shape<n>>(g);
  auto d = input<"d", Shape<n>, f64>(g);
  cast<i32>(x).named("x_i32");
  cast<i32>(d).named("d_i32");
  cast<i64>(d).named("d_i64");
  return cast<boolean>(x).named("x_bool");
});

TEST_CASE("float -> int truncates toward zero, saturates, and maps NaN to 0", "[op][cast]") {
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max(),
                         kMin = std::numeric_limits<std::int32_t>::min();
  constexpr std::int64_t kMax64 = std::numeric_limits<std::int64_t>::max(),
                         kMin64 = std::numeric_limits<std::int64_t>::min();
  const double two31 = std::ldexp(1.0, 31), two62 = std::ldexp(1.0, 62),
               two63 = std::ldexp(1.0, 63);
  const std::vector<double> x = {2.7, -2.7, 0.999,       1e10,   -1e10, nan,
                                 inf, -inf, two31 - 128, -two31, two31};
  const std::vector<double> d = {2147483647.9, -2147483648.9, 1e19,           -1e19, two62, -two63,
                                 two63,        nan,           123456789012.9, -0.5,  0};
  const Evaluation e = evaluate_reference(
      to_int, {{"x", from_doubles(DType::f32, x)}, {"d", from_doubles(DType::f64, d)}}, {});
  th::require_close(e["x_i32"], {2, -2, 0, kMax, kMin, 0, kMax, kMin, two31 - 128, kMin, kMax}, 0);
  th::require_close(e["d_i32"], {kMax, kMin, kMax, kMin, kMax, kMin, kMax, 0, kMax, 0, 0}, 0);
  const std::int64_t* l = e["d_i64"].data<std::int64_t>();
  const std::int64_t want64[] = {
      2147483647, -2147483648,  kMax64, kMin64, std::int64_t{1} << 62, kMin64, kMax64,
      0,          123456789012, 0,      0};
  for (int i = 0; i < 11; ++i) {
    INFO("element " << i);
    CHECK(l[i] == want64[i]);
  }
  // bool: anything but zero (NaN included, as in PyTorch) is true.
  th::require_close(e["x_bool"], {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0);
  const Evaluation z = evaluate_reference(
      to_int, {{"x", from_doubles(DType::f32, {0.0, -0.0, 1e-45})}, {"d", Array(DType::f64, {3})}},
      {});
  th::require_close(z["x_bool"], {0, 0, 1}, 0);
}

constexpr auto from_ints = model([](Builder& g) {
  auto i = input<"i", Shape<n>, i32>(g);
  auto l = input<"l", Shape<n>, i64>(g);
  auto k = input<"k", Shape<n>, boolean>(g);
  auto h = input<"h", Shape<n>, bf16>(g);
  cast<f32>(i).named("i_f32");
  cast<f32>(l).named("l_f32");
  cast<f64>(l).named("l_f64");
  cast<i32>(l).named("l_i32");
  cast<i64>(i).named("i_i64");
  cast<f32>(k).named("k_f32");
  cast<i32>(k).named("k_i32");
  cast<f32>(h).named("h_f32");
  return cast<f64>(h).named("h_f64");
});

TEST_CASE("int, bool and bf16 -> other types", "[op][cast]") {
  const std::int64_t two60 = std::int64_t{1} << 60, two36 = std::int64_t{1} << 36,
                     two40 = std::int64_t{1} << 40;
  const NamedArrays in{
      {"i", Array::from<std::int32_t>(
                {4}, {16777217, -16777219, 7, std::numeric_limits<std::int32_t>::max()})},
      // 2^60 + 2^36 + 1 is just above the f32 tie 2^60 + 2^36 (f32 ulp there is 2^37); via a
      // double it would first lose the +1 and then round to even, 2^60.
      {"l", Array::from<std::int64_t>({4}, {two60 + two36 + 1, -two40, 123, -1})},
      {"k", Array::from<bool>({4}, {true, false, false, true})},
      {"h", from_doubles(DType::bf16, {1.0, -2.5, 3.140625, std::ldexp(1.0, -133)})}};
  const Evaluation e = evaluate_reference(from_ints, in, {});
  th::require_close(e["i_f32"], {16777216, -16777220, 7, 2147483648.0}, 0);  // ties to even
  th::require_close(e["l_f32"],
                    {static_cast<double>(two60 + 2 * two36), -static_cast<double>(two40), 123, -1},
                    0);
  th::require_close(e["l_f64"],
                    {static_cast<double>(two60 + two36), -static_cast<double>(two40), 123, -1}, 0);
  th::require_close(
      e["l_i32"],
      {std::numeric_limits<std::int32_t>::max(), std::numeric_limits<std::int32_t>::min(), 123, -1},
      0);
  th::require_close(e["i_i64"], {16777217, -16777219, 7, std::numeric_limits<std::int32_t>::max()},
                    0);
  th::require_close(e["k_f32"], {1, 0, 0, 1}, 0);
  th::require_close(e["k_i32"], {1, 0, 0, 1}, 0);
  th::require_close(e["h_f32"], {1.0, -2.5, 3.140625, std::ldexp(1.0, -133)}, 0);
  th::require_close(e["h_f64"], {1.0, -2.5, 3.140625, std::ldexp(1.0, -133)}, 0);
  CHECK(e["k_f32"].dtype() == DType::f32);
}

// Gradients pass through float casts and stop at integer ones (a step function).
constexpr auto cast_loss = model([](Builder& g) {
  auto x = input<"x", Shape<n, 3>>(g);
  auto w = input<"w", Shape<n, 3>, f64>(g);
  auto wide = cast<f64>(x) * w;
  return cast<f32>(sum<0, 1>(wide * wide)) + sum<0, 1>(x * cast<f32>(cast<i32>(x * 4.0)));
});
constexpr auto cast_train = grad<cast_loss, "x">();
static_assert(cast_train.count(op::cast) == 6);  // four forward, two backward (f32 <-> f64)

TEST_CASE("cast on several bindings", "[op][cast][gradcheck]") {
  const std::int64_t lens[] = {5, 11, 13};
  th::check_op({.what = "cast",
                .forward = cast_loss,
                .train = cast_train,
                .inputs =
                    [&](int k) {
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {lens[k], 3}, 10 + k, -2, 2)},
                          {"w", th::random_array(DType::f64, {lens[k], 3}, 20 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

// sum, mean and max: result types, a hand example, every axis form (one, several, negative,
// keepdim, all axes to []) against a scatter-style fold written here, integer sums, NaN and
// infinities, and gradients (mean over symbolic sizes, max with distinct values).
#include <cstdint>
#include <functional>
#include <limits>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

using X = Tensor<Shape<rows, cols, 11>>;
static_assert(std::is_same_v<decltype(sum<-1>(std::declval<X>())), Tensor<Shape<rows, cols>>>);
static_assert(
    std::is_same_v<decltype(mean<1>(std::declval<X>(), keepdim)), Tensor<Shape<rows, 1, 11>>>);
static_assert(std::is_same_v<decltype(max<0, 1>(std::declval<X>())), Tensor<Shape<11>>>);
static_assert(std::is_same_v<decltype(sum<0, 1, 2>(std::declval<X>())), Tensor<Shape<>>>);
static_assert(
    std::is_same_v<decltype(sum<2, 0>(std::declval<X>(), keepdim)), Tensor<Shape<1, cols, 1>>>);
static_assert(std::is_same_v<decltype(max<-1>(std::declval<Tensor<Shape<rows>, i32>>())),
                             Tensor<Shape<>, i32>>);

constexpr auto small = model([](Builder& g) {
  auto x = input<"x", Shape<2, 3>>(g);
  sum<0>(x).named("sum0");
  sum<1>(x, keepdim).named("sum1k");
  mean<-1>(x).named("mean_last");
  max<0>(x).named("max0");
  max<1, 0>(x).named("max_all");
  return mean<0, 1>(x).named("mean_all");
});

TEST_CASE("reductions of [[1, 2, 3], [4, 5, -6]] by hand", "[op][reduce]") {
  const Evaluation e =
      evaluate_reference(small, {{"x", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, -6})}}, {});
  th::require_close(e["sum0"], {5, 7, -3}, 0);
  th::require_close(e["sum1k"], {6, 3}, 0);
  CHECK(e["sum1k"].dims() == std::vector<std::int64_t>{2, 1});
  th::require_close(e["mean_last"], {2, 1}, 0);
  th::require_close(e["max0"], {4, 5, 3}, 0);
  th::require_close(e["max_all"], {5}, 0);
  CHECK(e["max_all"].dims().empty());
  th::require_close(e["mean_all"], {1.5}, 0);
}

constexpr auto forms = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols, 11>>(g);
  sum<0>(x).named("sum0");
  sum<-1>(x, keepdim).named("sum_last_k");
  sum<0, 2>(x).named("sum02");
  mean<1>(x).named("mean1");
  mean<-3, -1>(x, keepdim).named("mean02_k");
  max<2>(x).named("max2");
  max<0, -2>(x, keepdim).named("max01_k");
  return sum<0, 1, 2>(x).named("total");
});

enum class Fold { sum, mean, max };

// Scatter-style reference: every input element goes to the output element whose kept
// coordinates it shares (the kernel gathers instead).
std::vector<double> fold(const Array& x, std::uint32_t mask, Fold f) {
  const auto& d = x.dims();
  std::int64_t out_n = 1, count = 1;
  for (std::size_t a = 0; a < d.size(); ++a) ((mask >> a) & 1 ? count : out_n) *= d[a];
  std::vector<double> out(static_cast<std::size_t>(out_n),
                          f == Fold::max ? -std::numeric_limits<double>::infinity() : 0.0);
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    std::int64_t rem = i, o = 0, scale = 1;
    for (int a = static_cast<int>(d.size()) - 1; a >= 0; --a) {
      const std::int64_t c = rem % d[static_cast<std::size_t>(a)];
      rem /= d[static_cast<std::size_t>(a)];
      if ((mask >> a) & 1) continue;
      o += c * scale;
      scale *= d[static_cast<std::size_t>(a)];
    }
    double& acc = out[static_cast<std::size_t>(o)];
    acc = f == Fold::max ? std::max(acc, x.at(i)) : acc + x.at(i);
  }
  if (f == Fold::mean)
    for (double& v : out) v /= static_cast<double>(count);
  return out;
}

TEST_CASE("reductions over every axis form, several bindings", "[op][reduce]") {
  for (auto [r, c] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {13, 1}, {1, 3}}) {
    INFO("rows " << r << ", cols " << c);
    const Array x = th::random_array(DType::f32, {r, c, 11}, 3 + r, -2, 2);
    const Evaluation e = evaluate_reference(forms, {{"x", x}}, {});
    th::require_close(e["sum0"], fold(x, 0b001, Fold::sum), 1e-5);
    th::require_close(e["sum_last_k"], fold(x, 0b100, Fold::sum), 1e-5);
    th::require_close(e["sum02"], fold(x, 0b101, Fold::sum), 1e-5);
    th::require_close(e["mean1"], fold(x, 0b010, Fold::mean), 1e-6);
    th::require_close(e["mean02_k"], fold(x, 0b101, Fold::mean), 1e-6);
    th::require_close(e["max2"], fold(x, 0b100, Fold::max), 0);
    th::require_close(e["max01_k"], fold(x, 0b011, Fold::max), 0);
    th::require_close(e["total"], fold(x, 0b111, Fold::sum), 1e-4);
    CHECK(e["sum_last_k"].dims() == std::vector<std::int64_t>{r, c, 1});
    CHECK(e["mean02_k"].dims() == std::vector<std::int64_t>{1, c, 1});
    CHECK(e["max01_k"].dims() == std::vector<std::int64_t>{1, 1, 11});
    CHECK(e["sum02"].dims() == std::vector<std::int64_t>{c});
  }
}

TEST_CASE("max propagates NaN; sums of infinities follow IEEE", "[op][reduce]") {
  const float inf = std::numeric_limits<float>::infinity(),
              nan = std::numeric_limits<float>::quiet_NaN();
  const Evaluation e = evaluate_reference(
      small, {{"x", Array::from<float>({2, 3}, {1, nan, 3, -inf, -inf, inf})}}, {});
  const std::vector<double> m0 = e["max0"].to_doubles();
  CHECK(m0[0] == 1);
  CHECK(std::isnan(m0[1]));
  CHECK(m0[2] == inf);
  CHECK(std::isnan(e["max_all"].at(0)));
  CHECK(std::isnan(e["sum1k"].at(0)));
  CHECK(std::isnan(e["sum1k"].at(1)));  // -inf + -inf + inf
  CHECK(e["sum0"].at(0) == -inf);
}

constexpr auto int_reds = model([](Builder& g) {
  auto i = input<"i", Shape<rows>, i32>(g);
  auto l = input<"l", Shape<rows>, i64>(g);
  max<0>(i).named("max_i");
  sum<0>(l).named("sum_l");
  max<0>(l).named("max_l");
  return sum<0>(i).named("sum_i");
});

TEST_CASE("integer sums are exact and wrap like repeated add", "[op][reduce]") {
  constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
  const std::int64_t big = (std::int64_t{1} << 53) + 1;  // not representable as a double
  const NamedArrays in{{"i", Array::from<std::int32_t>({5}, {-3, -9, -4, -5, -7})},
                       {"l", Array::from<std::int64_t>({5}, {big, 2, big, -1, 0})}};
  const Evaluation e = evaluate_reference(int_reds, in, {});
  th::require_close(e["sum_i"], {-28}, 0);
  th::require_close(e["max_i"], {-3}, 0);
  CHECK(e["sum_i"].dtype() == DType::i32);
  CHECK(e["sum_l"].data<std::int64_t>()[0] == 2 * big + 1);
  CHECK(e["max_l"].data<std::int64_t>()[0] == big);
  // kMax + 1 wraps to the minimum, as (x + y) does for i32 tensors.
  const Evaluation w = evaluate_reference(int_reds,
                                          {{"i", Array::from<std::int32_t>({2}, {kMax, 1})},
                                           {"l", Array::from<std::int64_t>({2}, {0, 0})}},
                                          {});
  th::require_close(w["sum_i"], {std::numeric_limits<std::int32_t>::min()}, 0);
}

// Weighted so that every output element gets its own gradient; x's values are distinct, so
// max has no ties (its kink), and mean divides by symbolic counts.
constexpr auto red_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols, 11>>(g);
  auto wa = input<"wa", Shape<cols, 11>>(g);
  auto wb = input<"wb", Shape<1, cols, 1>>(g);
  auto wc = input<"wc", Shape<rows, cols>>(g);
  auto wd = input<"wd", Shape<11>>(g);
  return sum<0, 1>(sum<0>(x) * wa) + sum<0, 1, 2>(mean<0, -1>(x, keepdim) * wb) +
         sum<0, 1>(max<2>(x) * wc) + sum<0>(max<0, 1>(x) * wd) + mean<0, 1, 2>(x) * 3.0;
});
constexpr auto red_train = grad<red_loss, "x", "wa", "wb", "wc", "wd">();

TEST_CASE("reductions on odd shapes and several bindings", "[op][reduce][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {13, 1}, {1, 3}};
  th::check_op({.what = "sum, mean, max",
                .forward = red_loss,
                .train = red_train,
                .inputs =
                    [&](int k) {
                      auto [r, c] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {r, c, 11}, 10 + k, -2, 2)},
                          {"wa", th::random_array(DType::f32, {c, 11}, 20 + k)},
                          {"wb", th::random_array(DType::f32, {1, c, 1}, 30 + k)},
                          {"wc", th::random_array(DType::f32, {r, c}, 40 + k)},
                          {"wd", th::random_array(DType::f32, {11}, 50 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

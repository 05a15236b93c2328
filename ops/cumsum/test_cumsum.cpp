// cumsum: result types, a hand example, every axis of a rank-3 tensor in both directions against
// sums written as double loops over j <= i (or j >= i), the CPU kernel against the reference bit
// for bit on a shape that splits across threads, and a gradient check on odd shapes.
#include <cstdint>
#include <vector>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto cols = sym<"cols">;

using X = Tensor<Shape<rows, cols, 5>>;
static_assert(std::is_same_v<decltype(cumsum<1>(std::declval<X>())), X>);
static_assert(std::is_same_v<decltype(cumsum<-1>(std::declval<X>(), reverse_scan)), X>);
static_assert(std::is_same_v<decltype(cumsum<0>(std::declval<Tensor<Shape<7>, f64>>())),
                             Tensor<Shape<7>, f64>>);

constexpr auto small = model([](Builder& g) {
  auto x = input<"x", Shape<2, 3>>(g);
  cumsum<0>(x).named("c0");
  cumsum<1>(x).named("c1");
  cumsum<-1>(x, reverse_scan).named("r1");
  return cumsum<-2>(x, reverse_scan).named("r0");
});

TEST_CASE("cumsum of [[1, 2, 3], [4, 5, -6]] by hand", "[op][cumsum]") {
  const Evaluation e =
      evaluate_reference(small, {{"x", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, -6})}}, {});
  th::require_close(e["c0"], {1, 2, 3, 5, 7, -3}, 0);
  th::require_close(e["c1"], {1, 3, 6, 4, 9, 3}, 0);
  th::require_close(e["r1"], {6, 5, 3, 3, -1, -6}, 0);
  th::require_close(e["r0"], {5, 7, -3, 4, 5, -6}, 0);
  CHECK(e["c1"].dims() == std::vector<std::int64_t>{2, 3});
}

constexpr auto forms = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols, 5>>(g);
  cumsum<0>(x).output("y0");
  cumsum<1>(x).output("y1");
  cumsum<2>(x).output("y2");
  cumsum<-3>(x, reverse_scan).output("r0");
  cumsum<-2>(x, reverse_scan).output("r1");
  cumsum<-1>(x, reverse_scan).output("r2");
  return sum<0, 1, 2>(x);
});

// y[i] = sum of x[j] over j <= i along `axis` (j >= i when reversed), as a double loop.
std::vector<double> prefix_sums(const Array& x, int axis, bool reverse) {
  const auto& d = x.dims();
  std::int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= d[static_cast<std::size_t>(k)];
  for (std::size_t k = static_cast<std::size_t>(axis) + 1; k < d.size(); ++k) inner *= d[k];
  const std::int64_t len = d[static_cast<std::size_t>(axis)];
  std::vector<double> y(static_cast<std::size_t>(x.numel()), 0.0);
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < len; ++i)
      for (std::int64_t j = 0; j < len; ++j) {
        if (reverse ? j < i : j > i) continue;
        for (std::int64_t c = 0; c < inner; ++c)
          y[static_cast<std::size_t>((o * len + i) * inner + c)] += x.at((o * len + j) * inner + c);
      }
  return y;
}

TEST_CASE("cumsum along every axis, both directions, symbolic dims", "[op][cumsum]") {
  for (auto [r, n] : {std::pair<std::int64_t, std::int64_t>{3, 7}, {11, 1}, {1, 13}}) {
    INFO(r << " x " << n << " x 5");
    const Array x = th::random_array(DType::f32, {r, n, 5}, 5 + r + n);
    const Evaluation e = evaluate_reference(forms, {{"x", x}}, {});
    for (int axis = 0; axis < 3; ++axis) {
      INFO("axis " << axis);
      th::require_close(e["y" + std::to_string(axis)], prefix_sums(x, axis, false), 1e-5);
      th::require_close(e["r" + std::to_string(axis)], prefix_sums(x, axis, true), 1e-5);
    }
  }
}

// Large enough that the CPU kernel splits the columns into blocks and runs in parallel.
constexpr auto big = model([](Builder& g) {
  auto x = input<"x", Shape<3, 67, 515>>(g);
  cumsum<1>(x).output("mid");
  cumsum<2>(x, reverse_scan).output("last");
  return sum<0, 1, 2>(cumsum<0>(x).output("first"));
});

TEST_CASE("cumsum: the CPU kernel is the reference's sequential sum, bit for bit", "[op][cumsum]") {
  const NamedArrays in{{"x", th::random_array(DType::f32, {3, 67, 515}, 77)}};
  const Evaluation ref = evaluate_reference(big, in, {});
  for (const th::Backend& be : th::backends()) {
    INFO("backend " << be.name);
    if (th::skips(be, big)) continue;
    int seen = 0;
    for (const auto& [node, value] : be.run(big, in, {}, {})) {
      if (node == big.result) continue;  // a sum: its order differs between kernels
      th::require_close(value, ref.node(node), 0);
      ++seen;
    }
    CHECK(seen == 3);
  }
}

constexpr auto cumsum_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, cols>>(g);
  auto w = input<"w", Shape<rows, cols>>(g);
  auto y = cumsum<0>(x) * w + cumsum<1>(x * w).output("y1") +
           cumsum<-1>(cumsum<0>(x, reverse_scan), reverse_scan).output("y2");
  return sum<0, 1>(y * w);
});
constexpr auto cumsum_train = grad<cumsum_loss, "x", "w">();
static_assert(cumsum_train.count(op::cumsum) == 8);  // 4 forward, 4 backward

TEST_CASE("cumsum: gradients on odd shapes", "[op][cumsum][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {13, 11}, {1, 1}};
  th::check_op({.what = "cumsum along both axes and both directions",
                .forward = cumsum_loss,
                .train = cumsum_train,
                .inputs =
                    [&](int k) {
                      auto [r, n] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, n}, 60 + k)},
                                         {"w", th::random_array(DType::f32, {r, n}, 70 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

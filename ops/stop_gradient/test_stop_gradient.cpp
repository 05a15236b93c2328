// stop_gradient: the identity forward; through grad<...> a parameter used only behind it gets
// a zero gradient, and one used on both sides gets only the unblocked path's gradient.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;

constexpr auto ident = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 7>>(g);
  auto s = input<"s", Shape<>, i32>(g);
  (void)stop_gradient(s).named("s_out");
  return stop_gradient(x).named("y");
});

TEST_CASE("stop_gradient is the identity forward", "[op][stop_gradient]") {
  for (std::int64_t r : {1, 5, 11}) {
    const Array x = th::random_array(DType::f32, {r, 7}, static_cast<std::uint64_t>(r));
    const Evaluation e =
        evaluate_reference(ident, {{"x", x}, {"s", Array::from<std::int32_t>({}, {-4})}}, {});
    th::require_close(e["y"], x, 0);
    th::require_close(e["s_out"], {-4}, 0);
  }
}

// blocked: w reaches the loss only through stop_gradient; half: loss = sum(sg(h) * h), h = x * v.
constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 5>>(g);
  auto w = param<Shape<5>>(g / "blocked", "weight");
  auto v = param<Shape<5>>(g / "half", "weight");
  auto h = x * v;
  return sum<0, 1>(stop_gradient(x * w) * x) + sum<0, 1>(stop_gradient(h) * h);
});
constexpr auto train = grad<net, "x">();
static_assert(train.count(op::stop_gradient) == 2);

TEST_CASE("no gradient flows through stop_gradient", "[op][stop_gradient]") {
  for (std::int64_t r : {1, 5, 13}) {
    const NamedArrays in{
        {"x", th::random_array(DType::f32, {r, 5}, 10 + static_cast<std::uint64_t>(r))}};
    const NamedArrays params{{"blocked.weight", th::random_array(DType::f32, {5}, 1)},
                             {"half.weight", th::random_array(DType::f32, {5}, 2)}};
    const Evaluation e = evaluate_reference(train, in, params);
    th::require_close(e["grad/blocked.weight"], std::vector<double>(5, 0.0), 0);
    // d/dv sum(sg(h) * h) = sum_r h[r, d] * x[r, d]: half of d/dv sum(h^2).
    const Array& x = in.at("x");
    const Array& v = params.at("half.weight");
    const Array& w = params.at("blocked.weight");
    std::vector<double> want_v(5, 0.0), want_x;
    for (std::int64_t i = 0; i < r; ++i)
      for (std::int64_t d = 0; d < 5; ++d) {
        const double xd = x.at(i * 5 + d);
        want_v[static_cast<std::size_t>(d)] += xd * v.at(d) * xd;
        // d/dx: the first term gives sg(x * w), the second sg(h) * v.
        want_x.push_back(xd * w.at(d) + xd * v.at(d) * v.at(d));
      }
    th::require_close(e["grad/half.weight"], want_v, 1e-5);
    th::require_close(e["grad/x"], want_x, 1e-5);
  }
}

}  // namespace

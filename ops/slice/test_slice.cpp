// slice: values against index arithmetic, static and symbolic dims (bounds checked when the
// symbol is bound), the gradient through slice_backward, and the shapes at compile time.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto seq = sym<"seq">;

// The sliced axis becomes static; the other dims keep their symbols.
static_assert(std::is_same_v<decltype(slice<1, 2, 7>(std::declval<Tensor<Shape<rows, 13>>>())),
                             Tensor<Shape<rows, 5>>>);
static_assert(std::is_same_v<decltype(slice<0, 1, 3>(std::declval<Tensor<Shape<seq, 4>>>())),
                             Tensor<Shape<2, 4>>>);
static_assert(std::is_same_v<decltype(slice<-1, 0, 1>(std::declval<Tensor<Shape<seq, 5>, i32>>())),
                             Tensor<Shape<seq, 1>, i32>>);

constexpr auto mid = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 13>>(g);
  return slice<1, 2, 7>(x).named("y");
});
constexpr auto head = model([](Builder& g) {
  auto x = input<"x", Shape<seq, 4>, i32>(g);
  return slice<0, 1, 3>(x).named("y");
});

// x[r, c] for a contiguous [R, C] array, sliced along `axis` by [start, end).
std::vector<double> expected_slice(const Array& x, int axis, std::int64_t start, std::int64_t end) {
  const std::int64_t R = x.dim(0), C = x.dim(1);
  std::vector<double> out;
  for (std::int64_t r = 0; r < R; ++r)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::int64_t k = axis == 0 ? r : c;
      if (k >= start && k < end) out.push_back(x.at(r * C + c));
    }
  return out;
}

TEST_CASE("slice of a static dim, hand-computed", "[op][slice]") {
  std::vector<float> v(2 * 13);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  const Evaluation e = evaluate_reference(mid, {{"x", Array::from_vector<float>({2, 13}, v)}}, {});
  CHECK(e["y"].dims() == std::vector<std::int64_t>{2, 5});
  th::require_close(e["y"], {2, 3, 4, 5, 6, 15, 16, 17, 18, 19}, 0);
}

TEST_CASE("slice along the rows for several bindings", "[op][slice]") {
  for (std::int64_t r : {5, 7, 11}) {
    const Array x =
        th::random_array(DType::f32, {r, 13}, 100 + static_cast<std::uint64_t>(r), -5, 5);
    th::require_close(evaluate_reference(mid, {{"x", x}}, {})["y"], expected_slice(x, 1, 2, 7), 0);
  }
  for (std::int64_t s : {3, 5, 13}) {
    const Array x =
        th::random_array(DType::i32, {s, 4}, 200 + static_cast<std::uint64_t>(s), -100, 100);
    const Evaluation e = evaluate_reference(head, {{"x", x}}, {});
    CHECK(e["y"].dtype() == DType::i32);
    th::require_close(e["y"], expected_slice(x, 0, 1, 3), 0);
  }
}

TEST_CASE("a symbolic dim shorter than the slice is refused at run time", "[op][slice]") {
  try {
    evaluate_reference(head, {{"x", Array(DType::i32, {2, 4})}}, {});
    FAIL("no error");
  } catch (const stag::Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(m.find("y: slice [1, 3) of dim 0 is out of range") != std::string::npos);
    CHECK(m.find("the dim is seq = 2, it must be at least 3") != std::string::npos);
  }
}

constexpr auto slice_loss = model([](Builder& g) {
  auto x = input<"x", Shape<seq, 11, 3>>(g);
  auto w1 = input<"w1", Shape<seq, 5, 3>>(g);
  auto w2 = input<"w2", Shape<2, 11, 3>>(g);
  // Two overlapping slices: the input gradient sums both scatters.
  return sum<0, 1, 2>(slice<1, 4, 9>(x) * w1) + sum<0, 1, 2>(slice<0, 1, 3>(x) * w2);
});
constexpr auto slice_train = grad<slice_loss, "x">();
static_assert(slice_train.count(op::slice_backward) == 2);

TEST_CASE("slice gradients on odd shapes and several bindings", "[op][slice][gradcheck]") {
  const std::int64_t seqs[] = {3, 5, 7};
  th::check_op({.what = "slice",
                .forward = slice_loss,
                .train = slice_train,
                .inputs =
                    [&](int k) {
                      const std::int64_t s = seqs[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {s, 11, 3}, 10 + k)},
                                         {"w1", th::random_array(DType::f32, {s, 5, 3}, 20 + k)},
                                         {"w2", th::random_array(DType::f32, {2, 11, 3}, 30 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("slice_backward places g at the slice and zeros elsewhere", "[op][slice]") {
  const NamedArrays in{{"x", th::random_array(DType::f32, {5, 11, 3}, 1)},
                       {"w1", th::random_array(DType::f32, {5, 5, 3}, 2)},
                       {"w2", th::random_array(DType::f32, {2, 11, 3}, 3)}};
  const Evaluation e = evaluate_reference(slice_train, in, {});
  const Array& w1 = in.at("w1");
  const Array& w2 = in.at("w2");
  std::vector<double> want(5 * 11 * 3, 0.0);
  for (std::int64_t s = 0; s < 5; ++s)
    for (std::int64_t c = 0; c < 11; ++c)
      for (std::int64_t d = 0; d < 3; ++d) {
        double v = 0;
        if (c >= 4 && c < 9) v += w1.at((s * 5 + (c - 4)) * 3 + d);
        if (s >= 1 && s < 3) v += w2.at(((s - 1) * 11 + c) * 3 + d);
        want[static_cast<std::size_t>((s * 11 + c) * 3 + d)] = v;
      }
  th::require_close(e["grad/x"], want, 1e-6);
}

// slice_backward is differentiable too (its gradient is the slice of g): zero-padding x.
constexpr auto pad_loss = model([](Builder& g) {
  auto x = input<"x", Shape<seq, 5>>(g);
  auto w = input<"w", Shape<seq, 11>>(g);
  const Ref padded = slice_backward(x.ref(), Shape<seq, 11>::value, 1, 4, 9);
  return sum<0, 1>(Tensor<Shape<seq, 11>>{&g, padded.id} * w);
});
constexpr auto pad_train = grad<pad_loss, "x">();
static_assert(pad_train.count(op::slice) == 1);

TEST_CASE("slice_backward's own gradient", "[op][slice][gradcheck]") {
  th::check_op({.what = "slice_backward",
                .forward = pad_loss,
                .train = pad_train,
                .inputs =
                    [](int k) {
                      const std::int64_t s = 1 + 6 * k;
                      return NamedArrays{{"x", th::random_array(DType::f32, {s, 5}, 80 + k)},
                                         {"w", th::random_array(DType::f32, {s, 11}, 90 + k)}};
                    },
                .bindings = 2});
}

}  // namespace

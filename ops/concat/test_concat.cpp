// concat: values against index arithmetic, static and symbolic axes (2*seq, 3*seq), dtypes
// other than float, and the gradient (each input's part of g) for several bindings.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto seq = sym<"seq">;

// Static axes add up; a symbolic axis becomes a multiple of its symbol.
static_assert(std::is_same_v<decltype(concat<-1>(std::declval<Tensor<Shape<rows, 5>>>(),
                                                 std::declval<Tensor<Shape<rows, 7>>>(),
                                                 std::declval<Tensor<Shape<rows, 1>>>())),
                             Tensor<Shape<rows, 13>>>);
static_assert(std::is_same_v<decltype(concat<0>(std::declval<Tensor<Shape<seq, 4>>>(),
                                                std::declval<Tensor<Shape<seq, 4>>>())),
                             Tensor<Shape<prod<2, seq>, 4>>>);
static_assert(
    std::is_same_v<decltype(concat<0>(std::declval<Tensor<Shape<seq, 4>, i32>>(),
                                      std::declval<Tensor<Shape<prod<2, seq>, 4>, i32>>())),
                   Tensor<Shape<prod<3, seq>, 4>, i32>>);

constexpr auto cols = model([](Builder& g) {
  auto a = input<"a", Shape<rows, 5>>(g);
  auto b = input<"b", Shape<rows, 7>>(g);
  auto c = input<"c", Shape<rows, 1>>(g);
  return concat<1>(a, b, c).named("y");
});
constexpr auto stacked = model([](Builder& g) {
  auto a = input<"a", Shape<seq, 3>, i32>(g);
  auto b = input<"b", Shape<prod<2, seq>, 3>, i32>(g);
  return concat<0>(a, b).named("y");
});

// Expected concat of [R, C_k] arrays along `axis` (0 or 1), by index arithmetic.
std::vector<double> expected_concat(const std::vector<Array>& parts, int axis) {
  std::vector<double> out;
  if (axis == 0) {
    for (const Array& p : parts)
      for (std::int64_t i = 0; i < p.numel(); ++i) out.push_back(p.at(i));
    return out;
  }
  for (std::int64_t r = 0; r < parts[0].dim(0); ++r)
    for (const Array& p : parts)
      for (std::int64_t c = 0; c < p.dim(1); ++c) out.push_back(p.at(r * p.dim(1) + c));
  return out;
}

TEST_CASE("concat along columns, hand-computed", "[op][concat]") {
  const NamedArrays in{{"a", Array::from<float>({1, 5}, {1, 2, 3, 4, 5})},
                       {"b", Array::from<float>({1, 7}, {6, 7, 8, 9, 10, 11, 12})},
                       {"c", Array::from<float>({1, 1}, {13})}};
  const Evaluation e = evaluate_reference(cols, in, {});
  CHECK(e["y"].dims() == std::vector<std::int64_t>{1, 13});
  th::require_close(e["y"], {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, 0);
}

TEST_CASE("concat on odd shapes and several bindings", "[op][concat]") {
  for (std::int64_t r : {5, 11, 13}) {
    const auto s = static_cast<std::uint64_t>(r);
    const std::vector<Array> parts = {th::random_array(DType::f32, {r, 5}, s),
                                      th::random_array(DType::f32, {r, 7}, s + 1),
                                      th::random_array(DType::f32, {r, 1}, s + 2)};
    const Evaluation e =
        evaluate_reference(cols, {{"a", parts[0]}, {"b", parts[1]}, {"c", parts[2]}}, {});
    th::require_close(e["y"], expected_concat(parts, 1), 0);
  }
  for (std::int64_t s : {1, 5, 7}) {
    const auto u = static_cast<std::uint64_t>(s);
    const std::vector<Array> parts = {th::random_array(DType::i32, {s, 3}, u, -50, 50),
                                      th::random_array(DType::i32, {2 * s, 3}, u + 1, -50, 50)};
    const Evaluation e = evaluate_reference(stacked, {{"a", parts[0]}, {"b", parts[1]}}, {});
    CHECK(e["y"].dims() == std::vector<std::int64_t>{3 * s, 3});
    th::require_close(e["y"], expected_concat(parts, 0), 0);
  }
}

// Gradients with a symbolic axis: the parts' offsets (0, seq, 3*seq) depend on the binding.
constexpr auto concat_loss = model([](Builder& g) {
  auto a = input<"a", Shape<seq, 3>>(g);
  auto b = input<"b", Shape<prod<2, seq>, 3>>(g);
  auto c = input<"c", Shape<seq, 3>>(g);
  auto w = input<"w", Shape<prod<4, seq>, 3>>(g);
  return sum<0, 1>(concat<0>(a, b, c) * w);
});
constexpr auto concat_train = grad<concat_loss, "a", "b", "c">();
static_assert(concat_train.count(op::concat_backward) == 3);

constexpr auto concat_cols_loss = model([](Builder& g) {
  auto a = input<"a", Shape<rows, 5>>(g);
  auto b = input<"b", Shape<rows, 7>>(g);
  auto w = input<"w", Shape<rows, 12>>(g);
  return sum<0, 1>(concat<-1>(a, b) * w);
});
constexpr auto concat_cols_train = grad<concat_cols_loss, "a", "b">();

TEST_CASE("concat gradients along a symbolic axis", "[op][concat][gradcheck]") {
  const std::int64_t seqs[] = {1, 5, 7};
  th::check_op({.what = "concat along 4*seq",
                .forward = concat_loss,
                .train = concat_train,
                .inputs =
                    [&](int k) {
                      const std::int64_t s = seqs[k];
                      return NamedArrays{{"a", th::random_array(DType::f32, {s, 3}, 10 + k)},
                                         {"b", th::random_array(DType::f32, {2 * s, 3}, 20 + k)},
                                         {"c", th::random_array(DType::f32, {s, 3}, 30 + k)},
                                         {"w", th::random_array(DType::f32, {4 * s, 3}, 40 + k)}};
                    },
                .bindings = 3});
}

TEST_CASE("concat gradients along a static axis", "[op][concat][gradcheck]") {
  th::check_op({.what = "concat along columns",
                .forward = concat_cols_loss,
                .train = concat_cols_train,
                .inputs =
                    [](int k) {
                      const std::int64_t r = 5 + 6 * k;
                      return NamedArrays{{"a", th::random_array(DType::f32, {r, 5}, 50 + k)},
                                         {"b", th::random_array(DType::f32, {r, 7}, 60 + k)},
                                         {"w", th::random_array(DType::f32, {r, 12}, 70 + k)}};
                    },
                .bindings = 2});
}

TEST_CASE("each input's gradient is its rows of w", "[op][concat]") {
  const std::int64_t s = 5;
  const NamedArrays in{{"a", th::random_array(DType::f32, {s, 3}, 1)},
                       {"b", th::random_array(DType::f32, {2 * s, 3}, 2)},
                       {"c", th::random_array(DType::f32, {s, 3}, 3)},
                       {"w", th::random_array(DType::f32, {4 * s, 3}, 4)}};
  const Evaluation e = evaluate_reference(concat_train, in, {});
  const Array& w = in.at("w");
  auto rows_of_w = [&](std::int64_t from, std::int64_t n) {
    std::vector<double> out;
    for (std::int64_t i = from * 3; i < (from + n) * 3; ++i) out.push_back(w.at(i));
    return out;
  };
  th::require_close(e["grad/a"], rows_of_w(0, s), 0);
  th::require_close(e["grad/b"], rows_of_w(s, 2 * s), 0);
  th::require_close(e["grad/c"], rows_of_w(3 * s, s), 0);
}

}  // namespace

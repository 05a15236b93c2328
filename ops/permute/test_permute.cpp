// permute and transpose: result types (negative axes, the attention head split), element
// positions checked by index formulas for f32, i32 and bool, symbolic dims bound to several
// values, and gradients (the inverse permutation) through the op harness.
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

using Heads = Tensor<Shape<batch, seq, 4, 8>>;
static_assert(std::is_same_v<decltype(transpose<1, 2>(std::declval<Heads>())),
                             Tensor<Shape<batch, 4, seq, 8>>>);
static_assert(std::is_same_v<decltype(permute<0, 2, 1, 3>(std::declval<Heads>())),
                             Tensor<Shape<batch, 4, seq, 8>>>);
static_assert(std::is_same_v<decltype(transpose<-1, -2>(std::declval<Heads>())),
                             Tensor<Shape<batch, seq, 8, 4>>>);
static_assert(std::is_same_v<decltype(permute<-1, 0, -3, 2>(std::declval<Heads>())),
                             Tensor<Shape<8, batch, seq, 4>>>);
static_assert(std::is_same_v<decltype(transpose<0, 0>(std::declval<Heads>())), Heads>);
static_assert(
    std::is_same_v<decltype(transpose<0, 1>(std::declval<Tensor<Shape<seq, 5>, boolean>>())),
                   Tensor<Shape<5, seq>, boolean>>);

constexpr auto moves = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 3>>(g);
  auto ids = input<"ids", Shape<batch, seq, 3>, i32>(g);
  auto keep = input<"keep", Shape<batch, seq, 3>, boolean>(g);
  permute<2, 0, 1>(x).named("p201");
  transpose<0, -1>(x).named("t02");
  transpose<-2, -1>(ids).named("ids_t");
  permute<1, 2, 0>(keep).named("keep_p");
  return sum<0, 1, 2>(x);
});

TEST_CASE("permute and transpose move every element where the index formula says",
          "[op][permute]") {
  for (const auto& dims : {std::pair<std::int64_t, std::int64_t>{5, 7}, {1, 11}, {13, 1}}) {
    // Named copies: clang 14 cannot capture structured bindings in the lambdas below.
    const std::int64_t b = dims.first, s = dims.second;
    INFO("batch " << b << ", seq " << s);
    const Array x = th::random_array(DType::f32, {b, s, 3}, 1);
    const Array ids = th::random_array(DType::i32, {b, s, 3}, 2, -1000, 1000);
    const Array keep = th::random_array(DType::boolean, {b, s, 3}, 3);
    const Evaluation e = evaluate_reference(moves, {{"x", x}, {"ids", ids}, {"keep", keep}}, {});
    auto at = [&](const Array& a, std::int64_t i, std::int64_t j, std::int64_t k) {
      return a.at((i * s + j) * 3 + k);
    };
    std::vector<double> p201, t02, ids_t, keep_p;
    for (std::int64_t k = 0; k < 3; ++k)  // p201[k][i][j] = x[i][j][k]
      for (std::int64_t i = 0; i < b; ++i)
        for (std::int64_t j = 0; j < s; ++j) p201.push_back(at(x, i, j, k));
    for (std::int64_t k = 0; k < 3; ++k)  // t02[k][j][i] = x[i][j][k]
      for (std::int64_t j = 0; j < s; ++j)
        for (std::int64_t i = 0; i < b; ++i) t02.push_back(at(x, i, j, k));
    for (std::int64_t i = 0; i < b; ++i)  // ids_t[i][k][j] = ids[i][j][k]
      for (std::int64_t k = 0; k < 3; ++k)
        for (std::int64_t j = 0; j < s; ++j) ids_t.push_back(at(ids, i, j, k));
    for (std::int64_t j = 0; j < s; ++j)  // keep_p[j][k][i] = keep[i][j][k]
      for (std::int64_t k = 0; k < 3; ++k)
        for (std::int64_t i = 0; i < b; ++i) keep_p.push_back(at(keep, i, j, k));
    th::require_close(e["p201"], p201, 0);
    th::require_close(e["t02"], t02, 0);
    th::require_close(e["ids_t"], ids_t, 0);
    th::require_close(e["keep_p"], keep_p, 0);
    CHECK(e["p201"].dims() == std::vector<std::int64_t>{3, b, s});
    CHECK(e["t02"].dims() == std::vector<std::int64_t>{3, s, b});
    CHECK(e["ids_t"].dtype() == DType::i32);
    CHECK(e["keep_p"].dtype() == DType::boolean);
  }
}

TEST_CASE("transpose of a 2x3 by hand", "[op][permute]") {
  const Array x = Array::from<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const Evaluation e =
      evaluate_reference(moves,
                         {{"x", x},
                          {"ids", Array::from<std::int32_t>({1, 2, 3}, {1, 2, 3, 4, 5, 6})},
                          {"keep", Array(DType::boolean, {1, 2, 3})}},
                         {});
  th::require_close(e["ids_t"], {1, 4, 2, 5, 3, 6}, 0);  // [[1,2,3],[4,5,6]]^T
  th::require_close(e["p201"], {1, 4, 2, 5, 3, 6}, 0);   // [3, 1, 2]
}

// Permutes of rank 3 and 4 whose output gradients differ per element.
constexpr auto perm_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 3>>(g);
  auto q = input<"q", Shape<batch, seq, 2, 5>>(g);
  auto w1 = input<"w1", Shape<3, batch, seq>>(g);
  auto w2 = input<"w2", Shape<3, seq, batch>>(g);
  auto w3 = input<"w3", Shape<batch, 2, seq, 5>>(g);
  return sum<0, 1, 2>(permute<2, 0, 1>(x) * w1) + sum<0, 1, 2>(transpose<-1, -3>(x) * w2) +
         sum<0, 1, 2, 3>(transpose<1, 2>(q) * w3) +
         sum<0, 1, 2, 3>(permute<3, 2, 1, 0>(q) * permute<3, 2, 1, 0>(q));
});
constexpr auto perm_train = grad<perm_loss, "x", "q">();

TEST_CASE("permute on odd shapes and several bindings", "[op][permute][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {11, 1}, {1, 13}};
  th::check_op({.what = "permute and transpose",
                .forward = perm_loss,
                .train = perm_train,
                .inputs =
                    [&](int k) {
                      auto [b, s] = dims[k];
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {b, s, 3}, 10 + k)},
                          {"q", th::random_array(DType::f32, {b, s, 2, 5}, 20 + k)},
                          {"w1", th::random_array(DType::f32, {3, b, s}, 30 + k)},
                          {"w2", th::random_array(DType::f32, {3, s, b}, 40 + k)},
                          {"w3", th::random_array(DType::f32, {b, 2, s, 5}, 50 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

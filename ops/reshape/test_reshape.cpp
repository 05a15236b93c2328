// view, unsqueeze and squeeze: result types (products of symbols, the head split, negative
// axes, [] scalars), values that keep their row-major order for f32, i32 and bool under
// several bindings, and gradients through a chain of views.
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

using X = Tensor<Shape<batch, seq, 12>>;
static_assert(std::is_same_v<decltype(view<batch, seq, 3, 4>(std::declval<X>())),
                             Tensor<Shape<batch, seq, 3, 4>>>);
static_assert(std::is_same_v<decltype(view<batch * seq, 12>(std::declval<X>())),
                             Tensor<Shape<batch * seq, 12>>>);
// A product keeps its factors' order: tokens merged sequence-major are another layout.
static_assert(std::is_same_v<decltype(view<seq * batch, 12>(transpose<0, 1>(std::declval<X>()))),
                             Tensor<Shape<seq * batch, 12>>>);
static_assert(!std::is_same_v<Tensor<Shape<seq * batch, 12>>, Tensor<Shape<batch * seq, 12>>>);
static_assert(std::is_same_v<decltype(view<batch, prod<seq, 12>>(std::declval<X>())),
                             Tensor<Shape<batch, prod<seq, 12>>>>);
static_assert(std::is_same_v<decltype(view<batch, seq, 12>(std::declval<X>())), X>);
static_assert(
    std::is_same_v<decltype(unsqueeze<1>(std::declval<Tensor<Shape<batch, seq>, boolean>>())),
                   Tensor<Shape<batch, 1, seq>, boolean>>);
static_assert(std::is_same_v<decltype(unsqueeze<-1>(std::declval<Tensor<Shape<batch, seq>>>())),
                             Tensor<Shape<batch, seq, 1>>>);
static_assert(
    std::is_same_v<decltype(unsqueeze<0>(std::declval<Tensor<Shape<>>>())), Tensor<Shape<1>>>);
static_assert(std::is_same_v<decltype(squeeze<1>(std::declval<Tensor<Shape<batch, 1, seq>>>())),
                             Tensor<Shape<batch, seq>>>);
static_assert(std::is_same_v<decltype(squeeze<-1>(std::declval<Tensor<Shape<seq, 1>, i32>>())),
                             Tensor<Shape<seq>, i32>>);
static_assert(
    std::is_same_v<decltype(squeeze<0>(std::declval<Tensor<Shape<1>>>())), Tensor<Shape<>>>);
// The head split and merge of multi-head attention, with its transposes.
static_assert(std::is_same_v<decltype(view<batch, seq, 12>(transpose<1, 2>(
                                 transpose<1, 2>(view<batch, seq, 3, 4>(std::declval<X>()))))),
                             X>);

constexpr auto views = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 12>>(g);
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  auto s = input<"s", Shape<>>(g);
  view<batch * seq, 12>(x).named("flat");
  view<batch, seq, 3, 4>(x).named("heads");
  // [3, 4] -> [2, 2, 3] is no split or merge: it goes through the merged [12].
  view<batch, seq, 2, 2, 3>(view<batch, seq, 12>(view<batch * seq, 3, 4>(x))).named("twice");
  unsqueeze<1>(ids).named("ids_u");
  squeeze<1>(unsqueeze<-2>(keep)).named("keep_us");
  unsqueeze<1>(unsqueeze<1>(keep)).named("keep_b11s");
  view<1, 1>(s).named("s11");
  squeeze<0>(unsqueeze<0>(s)).named("s_back");
  return sum<0, 1>(view<batch * seq, 12>(x));
});

TEST_CASE("views keep the row-major order, several bindings", "[op][reshape]") {
  for (auto [b, sq] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {1, 13}, {11, 1}}) {
    INFO("batch " << b << ", seq " << sq);
    const Array x = th::random_array(DType::f32, {b, sq, 12}, 1);
    const Array ids = th::random_array(DType::i32, {b, sq}, 2, -50, 50);
    const Array keep = th::random_array(DType::boolean, {b, sq}, 3);
    const Evaluation e = evaluate_reference(
        views, {{"x", x}, {"ids", ids}, {"keep", keep}, {"s", Array::from<float>({}, {2.5f})}}, {});
    const std::vector<double> xs = x.to_doubles();
    for (const char* name : {"flat", "heads", "twice"}) {
      INFO(name);
      th::require_close(e[name], xs, 0);
    }
    CHECK(e["flat"].dims() == std::vector<std::int64_t>{b * sq, 12});
    CHECK(e["heads"].dims() == std::vector<std::int64_t>{b, sq, 3, 4});
    CHECK(e["twice"].dims() == std::vector<std::int64_t>{b, sq, 2, 2, 3});
    th::require_close(e["ids_u"], ids.to_doubles(), 0);
    CHECK(e["ids_u"].dims() == std::vector<std::int64_t>{b, 1, sq});
    th::require_close(e["keep_us"], keep.to_doubles(), 0);
    CHECK(e["keep_us"].dims() == std::vector<std::int64_t>{b, sq});
    CHECK(e["keep_b11s"].dims() == std::vector<std::int64_t>{b, 1, 1, sq});
    th::require_close(e["s11"], {2.5}, 0);
    CHECK(e["s11"].dims() == std::vector<std::int64_t>{1, 1});
    th::require_close(e["s_back"], {2.5}, 0);
    CHECK(e["s_back"].dims().empty());
  }
}

// Views between linear-algebra steps, as a multi-head layer uses them.
constexpr auto view_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 12>>(g);
  auto w = input<"w", Shape<batch, 3, seq, 4>>(g);
  auto m = input<"m", Shape<batch, seq>>(g);
  auto heads = transpose<1, 2>(view<batch, seq, 3, 4>(x));
  auto merged = view<batch * seq, 12>(transpose<1, 2>(heads * w));
  auto masked = squeeze<-1>(unsqueeze<-1>(m)) * m;
  return sum<0, 1>(merged * merged) + sum<0, 1, 2, 3>(unsqueeze<1>(unsqueeze<-1>(masked)) * heads);
});
constexpr auto view_train = grad<view_loss, "x", "w", "m">();

TEST_CASE("views on odd shapes and several bindings", "[op][reshape][gradcheck]") {
  const std::pair<std::int64_t, std::int64_t> dims[] = {{5, 7}, {1, 13}, {11, 1}};
  th::check_op({.what = "view, unsqueeze, squeeze",
                .forward = view_loss,
                .train = view_train,
                .inputs =
                    [&](int k) {
                      auto [b, s] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {b, s, 12}, 10 + k)},
                                         {"w", th::random_array(DType::f32, {b, 3, s, 4}, 20 + k)},
                                         {"m", th::random_array(DType::f32, {b, s}, 30 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

// embedding: row lookups by hand, a scalar id, repeated ids accumulating in the gradient,
// ids out of range (a clear error, never a read outside the table), odd shapes and several
// bindings through the op harness.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

// table[v][k] = 10 v + k, so every looked-up value says which row it came from.
Array counting_table(std::int64_t v, std::int64_t d) {
  Array t(DType::f32, {v, d});
  for (std::int64_t i = 0; i < v; ++i)
    for (std::int64_t k = 0; k < d; ++k) t.set(i * d + k, static_cast<double>(10 * i + k));
  return t;
}

constexpr auto lookup = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto table = param<Shape<5, 3>>(g / "tok", "weight", kEmbeddingInit);
  auto y = embedding(ids, table).named("y");
  static_assert(std::is_same_v<decltype(y), Tensor<Shape<batch, seq, 3>, f32>>);
  return sum<0, 1, 2>(y);
});
constexpr auto lookup_train = grad<lookup>();
static_assert(lookup_train.count(op::embedding_backward) == 1);
static_assert(lookup_train.shape(lookup_train.output("grad/tok.weight")) == Shape<5, 3>::value);

TEST_CASE("embedding copies the rows the ids name", "[op][embedding]") {
  const NamedArrays in{{"ids", Array::from<std::int32_t>({2, 3}, {4, 0, 4, 1, 1, 2})}};
  const NamedArrays params{{"tok.weight", counting_table(5, 3)}};
  const Evaluation e = evaluate_reference(lookup_train, in, params);
  th::require_close(e["y"], {40, 41, 42, 0, 1, 2, 40, 41, 42, 10, 11, 12, 10, 11, 12, 20, 21, 22},
                    0);
  // d sum(y) / d table[v][k] = the number of times v occurs: 0 once, 1 twice, 2 once, 3 never,
  // 4 twice. Repeated ids must accumulate, not overwrite.
  th::require_close(e["grad/tok.weight"], {1, 1, 1, 2, 2, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2}, 0);
}

TEST_CASE("embedding of a scalar id is one row", "[op][embedding]") {
  static constexpr auto one = model([](Builder& g) {
    auto id = input<"id", Shape<>, i64>(g);
    auto table = param<Shape<7, 4>>(g / "tok", "weight");
    auto y = embedding(id, table).named("y");
    static_assert(std::is_same_v<decltype(y), Tensor<Shape<4>, f32>>);
    return sum<0>(y);
  });
  const NamedArrays in{{"id", Array::from<std::int64_t>({}, {6})}};
  th::require_close(evaluate_reference(one, in, {{"tok.weight", counting_table(7, 4)}})["y"],
                    {60, 61, 62, 63}, 0);
}

constexpr auto tokens = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto table = param<Shape<8000, 4>>(g / "tok", "weight", kEmbeddingInit);
  return sum<0, 1, 2>(embedding(ids, table).named("tok"));
});

TEST_CASE("an id outside the vocabulary is an error naming the node, position and range",
          "[op][embedding]") {
  const NamedArrays params = make_params(tokens, {}, 1);
  Array ids(DType::i32, {4, 18});
  ids.set(3 * 18 + 17, 8001);
  CHECK_THROWS_WITH(evaluate_reference(tokens, {{"ids", ids}}, params),
                    "stag: embedding 'tok': token id 8001 at [3, 17] is outside [0, 8000)");
  ids.set(3 * 18 + 17, 0);
  ids.set(1 * 18 + 2, -1);
  CHECK_THROWS_WITH(evaluate_reference(tokens, {{"ids", ids}}, params),
                    "stag: embedding 'tok': token id -1 at [1, 2] is outside [0, 8000)");
  ids.set(1 * 18 + 2, 7999);  // the last valid id
  CHECK_NOTHROW(evaluate_reference(tokens, {{"ids", ids}}, params));
}

TEST_CASE("a sequence longer than a learned position table says so, naming the table",
          "[op][embedding]") {
  static constexpr auto pos = model([](Builder& g) {
    auto x = input<"x", Shape<batch, seq, 4>>(g);
    return sum<0, 1, 2>(x + learned_positions<6, 4, seq>(g / "pos"));
  });
  const NamedArrays params = make_params(pos, {}, 1);
  CHECK_NOTHROW(evaluate_reference(pos, {{"x", Array(DType::f32, {2, 6, 4})}}, params));
  const std::string expected =
      "the sequence has 7 positions but the position table 'pos.weight' has 6 rows (position 6 "
      "is outside it); cut the inputs to at most 6 tokens or build the model with a longer table";
  CHECK_THROWS_WITH(evaluate_reference(pos, {{"x", Array(DType::f32, {2, 7, 4})}}, params),
                    Catch::Contains(expected));
  Session s(pos, {.threads = 1});
  s.set_inputs({{"x", Array(DType::f32, {2, 7, 4})}});
  CHECK_THROWS_WITH(s.run(), Catch::Contains(expected));
}

TEST_CASE("i64 ids are checked exactly, not through double", "[op][embedding]") {
  static constexpr auto wide = model([](Builder& g) {
    auto ids = input<"ids", Shape<seq>, i64>(g);
    auto table = param<Shape<3, 2>>(g / "tok", "weight");
    return sum<0, 1>(embedding(ids, table).named("lookup"));
  });
  const NamedArrays params = make_params(wide, {}, 1);
  Array ids(DType::i64, {2});
  ids.data<std::int64_t>()[1] = (std::int64_t{1} << 53) + 1;  // not representable as a double
  CHECK_THROWS_WITH(evaluate_reference(wide, {{"ids", ids}}, params),
                    "stag: embedding 'lookup': token id 9007199254740993 at [1] is outside [0, 3)");
}

// Gradients: a random weighting of the output; the table is a parameter, ids get none.
constexpr auto emb_loss = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto r = input<"r", Shape<batch, seq, 7>>(g);
  auto table = param<Shape<11, 7>>(g / "tok", "weight", kEmbeddingInit);
  return sum<0, 1, 2>(embedding(ids, table) * r);
});
constexpr auto emb_train = grad<emb_loss>();

TEST_CASE("embedding on odd shapes and several bindings", "[op][embedding][gradcheck]") {
  const std::pair<int, int> dims[] = {{5, 7}, {13, 11}, {1, 1}};
  th::check_op({.what = "embedding [batch, seq] into [11, 7]",
                .forward = emb_loss,
                .train = emb_train,
                .inputs =
                    [&](int k) {
                      auto [b, s] = dims[k];
                      return NamedArrays{
                          {"ids", th::random_array(DType::i32, {b, s}, 260 + k, 0, 11)},
                          {"r", th::random_array(DType::f32, {b, s, 7}, 270 + k)}};
                    },
                .bindings = 3});
}

}  // namespace

// Bad input is refused with a message naming the input, the dim, expected and actual values.
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto graph = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 8>>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  auto flat = input<"flat", Shape<batch * seq, 8>>(g);
  auto w = param<Shape<8, 3>>(g / "proj", "weight");
  auto y = matmul(x + view<batch, seq, 8>(flat), w);
  return sum<0, 1, 2>(y * cast<f32>(unsqueeze<-1>(keep)));
});

NamedArrays good_inputs(std::int64_t b, std::int64_t s) {
  return {{"x", th::random_array(DType::f32, {b, s, 8}, 1)},
          {"keep", th::random_array(DType::boolean, {b, s}, 2)},
          {"flat", th::random_array(DType::f32, {b * s, 8}, 3)}};
}

std::string error_of(const NamedArrays& in) {
  const NamedArrays params = make_params(graph, {}, 1);
  try {
    evaluate_reference(graph, in, params);
  } catch (const stag::Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("good inputs bind every symbol, including products", "[bind]") {
  NamedArrays in = good_inputs(3, 5);
  const Bindings b = bind_symbols(graph, in, nullptr);
  CHECK(b.get(batch.id) == 3);
  CHECK(b.get(seq.id) == 5);
  CHECK(b.describe(graph).find("batch=3") != std::string::npos);
}

TEST_CASE("wrong dtype names the input and both dtypes", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in["keep"] = th::random_array(DType::f32, {2, 3}, 2);
  const std::string e = error_of(in);
  CHECK(e.find("input 'keep'") != std::string::npos);
  CHECK(e.find("expected dtype bool, got f32") != std::string::npos);
}

TEST_CASE("wrong rank names the input and both shapes", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in["x"] = th::random_array(DType::f32, {2, 3, 8, 1}, 1);
  const std::string e = error_of(in);
  CHECK(e.find("input 'x'") != std::string::npos);
  CHECK(e.find("expected rank 3 [batch, seq, 8], got rank 4 [2, 3, 8, 1]") != std::string::npos);
}

TEST_CASE("a static dim that differs names the dim", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in["x"] = th::random_array(DType::f32, {2, 3, 7}, 1);
  const std::string e = error_of(in);
  CHECK(e.find("input 'x' dim 2: expected 8, got 7") != std::string::npos);
}

TEST_CASE("one symbol bound to two values names both places", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in["keep"] = th::random_array(DType::boolean, {2, 4}, 2);
  const std::string e = error_of(in);
  CHECK(e.find("symbol 'seq' is 3") != std::string::npos);
  CHECK(e.find("but 4 in input 'keep' dim 1") != std::string::npos);
}

TEST_CASE("a product dim that does not match the bound symbols is refused", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in["flat"] = th::random_array(DType::f32, {7, 8}, 3);
  const std::string e = error_of(in);
  CHECK(e.find("input 'flat' dim 0") != std::string::npos);
}

TEST_CASE("missing and unknown inputs are named", "[bind]") {
  NamedArrays in = good_inputs(2, 3);
  in.erase("keep");
  CHECK(error_of(in).find("input 'keep' was not given (expected bool [batch, seq])") !=
        std::string::npos);
  in = good_inputs(2, 3);
  in["kep"] = th::random_array(DType::boolean, {2, 3}, 2);
  CHECK(error_of(in).find("'kep' is not an input of this graph (inputs: x, keep, flat)") !=
        std::string::npos);
}

STAG_NAMED_DIM(bind_heads, 4);
STAG_NAMED_DIM(bind_head_dim, 2);
constexpr auto named_graph = model([](Builder& g) {
  auto x = input<"x", Shape<batch, bind_heads, seq, bind_head_dim>>(g);
  return sum<0, 1, 2>(view<batch, seq, bind_heads * bind_head_dim>(transpose<1, 2>(x)));
});

TEST_CASE("run-time shape errors spell named dims with their sizes", "[bind][shapes]") {
  const NamedArrays in{{"x", th::random_array(DType::f32, {2, 3, 5, 2}, 1)}};
  std::string e;
  try {
    evaluate_reference(named_graph, in, {});
  } catch (const stag::Error& err) {
    e = err.what();
  }
  CHECK(e.find("input 'x' dim 1: expected bind_heads=4, got 3") != std::string::npos);
  const NamedArrays rank{{"x", th::random_array(DType::f32, {2, 4, 5}, 1)}};
  try {
    evaluate_reference(named_graph, rank, {});
    e.clear();
  } catch (const stag::Error& err) {
    e = err.what();
  }
  CHECK(e.find("expected rank 4 [batch, bind_heads=4, seq, bind_head_dim=2], got rank 3 "
               "[2, 4, 5]") != std::string::npos);
}

TEST_CASE("a parameter of the wrong shape is refused", "[bind]") {
  NamedArrays params = make_params(graph, {}, 1);
  params["proj.weight"] = th::random_array(DType::f32, {3, 8}, 1);
  try {
    evaluate_reference(graph, good_inputs(2, 3), params);
    FAIL("no error");
  } catch (const stag::Error& e) {
    CHECK(std::string(e.what()).find("parameter 'proj.weight' dim 0: expected 8, got 3") !=
          std::string::npos);
  }
}

}  // namespace

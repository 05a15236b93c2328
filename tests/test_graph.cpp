// The static graph: building in loops, compile-time queries, names and scopes, and a 12-layer
// encoder-style stack (the translation unit whose compile time the docs report).
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int D = 64, H = 4, F = 128;

template <int Out, class S>
constexpr auto linear_layer(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  auto w = param<Shape<in, Out>>(s, "weight");
  auto b = param<Shape<Out>>(s, "bias", kZeros);
  return matmul(x, w) + b;
}

// An encoder-style block written the way the articles write one, with shapes in the types.
template <class X, class K>
constexpr auto block(Scope s, X x, K keep) {
  auto guard = s.enter();
  auto q = transpose<1, 2>(view<batch, seq, H, D / H>(linear_layer<D>(s / "w_q", x)));
  auto k = transpose<1, 2>(view<batch, seq, H, D / H>(linear_layer<D>(s / "w_k", x)));
  auto v = transpose<1, 2>(view<batch, seq, H, D / H>(linear_layer<D>(s / "w_v", x)));
  auto scores = matmul_nt(q, k) * 0.25;
  auto attn = softmax<-1>(scores, unsqueeze<1>(unsqueeze<1>(keep))).named("weights");
  auto ctx = view<batch, seq, D>(transpose<1, 2>(matmul(attn, v)));
  auto h = x + linear_layer<D>(s / "w_o", ctx);
  auto ff = linear_layer<D>(s / "ff2", gelu(linear_layer<F>(s / "ff1", h)));
  return h + ff;
}

constexpr int kLayers = 12;
constexpr auto encoder = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, D>>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  Tensor<Shape<batch, seq, D>> h = x;
  for (int l = 0; l < kLayers; ++l) h = block(g / "enc" / l, h, keep);  // a plain loop
  return mean<0, 1, 2>(h);
});

// The graph is a compile-time constant: count ops, find names, read shapes.
static_assert(encoder.count(op::softmax) == kLayers);
// The fusion pass turned each layer's matmul(softmax(q k^T * c, keep), v) into one attention op
// (ops/attention/fuse.hpp); the softmax chain stays, read by nothing, for asking for "weights".
static_assert(encoder.count(op::attention) == kLayers);
static_assert(encoder.count(op::matmul) == kLayers * 7);
static_assert(encoder.num_params() == kLayers * 12);
static_assert(encoder.num_inputs() == 2);
static_assert(encoder.find("enc.3.w_q.weight") >= 0);
static_assert(encoder.find("enc.12.w_q.weight") < 0);
static_assert(encoder.find("enc.11.weights") >= 0);
static_assert(encoder.shape("enc.3.ff1.weight") == Shape<D, F>::value);
static_assert(encoder.shape("enc.3.weights") == Shape<batch, H, seq, seq>::value);
static_assert(encoder.shape(encoder.result).rank == 0);

TEST_CASE("graph names follow the scope tree", "[graph]") {
  const GraphView g = encoder;
  const int w = g.find("enc.7.w_v.weight");
  REQUIRE(w >= 0);
  CHECK(g.name(w) == "enc.7.w_v.weight");
  CHECK((g.node(w).flags & kFlagParam) != 0);
  CHECK(g.name(g.find("x")) == "x");
  CHECK(g.sym_name(batch.id) == "batch");
  // Intermediate nodes land in the scope the layer entered.
  const int attn = g.find("enc.0.weights");
  REQUIRE(attn >= 0);
  CHECK(op_name(g.node(attn).op) == "softmax");
  CHECK(shape_text(g, g.shape(attn)) == "[batch, 4, seq, seq]");
}

TEST_CASE("the 12-layer encoder evaluates and its symbols bind per run", "[graph]") {
  const GraphView g = encoder;
  NamedArrays params = make_params(g, {}, 42);
  CHECK(params.size() == static_cast<std::size_t>(kLayers * 12));
  for (auto [b, s] : {std::pair{2, 5}, std::pair{1, 7}}) {
    NamedArrays in{{"x", th::random_array(DType::f32, {b, s, D}, 3)},
                   {"keep", th::random_array(DType::boolean, {b, s}, 4)}};
    const Evaluation e = evaluate_reference(g, in, params);
    CHECK(std::isfinite(e.result().at(0)));
    CHECK(e["enc.0.weights"].dims() == std::vector<std::int64_t>{b, H, s, s});
  }
}

}  // namespace

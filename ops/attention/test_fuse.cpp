// The compile-time fusion pass (ops/attention/fuse.hpp): attention chains written by hand
// become one attention op (proved by static_assert on the graphs), with the values and every
// gradient of the same chain built with the pass turned off; the reference and numeric
// gradient checks of the fused graphs; the forms it recognises (matmul_nt or a transposed k,
// `* c`, `/ c`, a bias of rank 2 and 4, causal and padding keep masks, dropout), weights that
// stay readable as an output, and the chains it must leave alone.
#include <algorithm>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto seq = sym<"seq">;
constexpr int kB = 2, kH = 2, kDk = 5, kDv = 3;
constexpr double kDrop = 0.25;

// The forms under test.
enum Form {
  kMulPadCausal,   // matmul_nt(q, k) * c, keep = causal & padding, dropout
  kDivTransposed,  // matmul(q, transpose<-2, -1>(k)) / c, keep = causal only (analytic)
  kBias2,          // c * matmul_nt(q, k) + bias [seq, seq], keep = causal & padding
  kBias4,          // matmul_nt(q, k) * c + bias [1, H, seq, seq], no mask, dropout
  kWeightsOut,     // as kMulPadCausal without dropout, the weights also a graph output
};

template <int F>
constexpr bool has_drop = F == kMulPadCausal || F == kBias4;

template <int F, bool Fuse>
constexpr auto chain = model([](Builder& g) {
  g.fuse_attention = Fuse;
  auto q = input<"q", Shape<kB, kH, seq, kDk>>(g);
  auto k = input<"k", Shape<kB, kH, seq, kDk>>(g);
  auto v = input<"v", Shape<kB, kH, seq, kDv>>(g);
  auto len = input<"len", Shape<kB>, i32>(g);
  auto w = input<"w", Shape<kB, kH, seq, kDv>>(g);
  auto causal = unsqueeze<0>(unsqueeze<0>(causal_mask<seq>(g)));            // [1, 1, S, S]
  auto keep = causal & unsqueeze<1>(unsqueeze<1>(padding_mask<seq>(len)));  // [B, 1, S, S]
  auto scores = [&] {
    if constexpr (F == kDivTransposed) {
      return matmul(q, transpose<-2, -1>(k)) / 2.0;
    } else if constexpr (F == kBias2) {
      auto bias = input<"bias", Shape<seq, seq>>(g);
      return 0.4 * matmul_nt(q, k) + bias;
    } else if constexpr (F == kBias4) {
      auto bias = input<"bias", Shape<1, kH, seq, seq>>(g);
      return matmul_nt(q, k) * 0.4 + bias;
    } else {
      return matmul_nt(q, k) * 0.45;
    }
  }();
  auto p = [&] {
    if constexpr (F == kDivTransposed)
      return softmax<-1>(scores, causal);
    else if constexpr (F == kBias4)
      return softmax<-1>(scores);
    else
      return softmax<-1>(scores, keep);
  }();
  if constexpr (F == kWeightsOut) p = p.named("weights").output("weights");
  if constexpr (has_drop<F>) p = dropout(p, kDrop);
  return sum<0, 1, 2, 3>(matmul(p, v) * w);
});

template <int F, bool Fuse>
constexpr auto train = [] {
  if constexpr (F == kBias2 || F == kBias4)
    return grad<chain<F, Fuse>, "q", "k", "v", "bias">();
  else
    return grad<chain<F, Fuse>, "q", "k", "v">();
}();

// The pass fired, and did not with the model opted out. A fused graph keeps the chain's nodes
// (read by nothing, or by outputs only); the training graph drops them.
static_assert(chain<kMulPadCausal, true>.count(op::attention) == 1);
static_assert(chain<kMulPadCausal, false>.count(op::attention) == 0);
static_assert(chain<kDivTransposed, true>.count(op::attention) == 1);
static_assert(chain<kBias2, true>.count(op::attention) == 1);
static_assert(chain<kBias4, true>.count(op::attention) == 1);
static_assert(chain<kWeightsOut, true>.count(op::attention) == 1);
static_assert(train<kMulPadCausal, true>.count(op::softmax) == 0);
static_assert(train<kMulPadCausal, true>.count(op::attention_backward) == 1);
static_assert(train<kMulPadCausal, false>.count(op::softmax_backward) == 1);
static_assert(train<kBias2, true>.count(op::attention_backward_kv) == 3);  // dk, dv, dbias
static_assert(train<kWeightsOut, true>.count(op::softmax) == 1);           // the output's recompute

// What the fused node says: the mask, the scale, the inputs.
template <int F>
constexpr const Node& fused_node() {
  const auto& g = chain<F, true>;
  for (int n = 0; n < g.size(); ++n)
    if (g.nodes[static_cast<std::size_t>(n)].op == op::attention)
      return g.nodes[static_cast<std::size_t>(n)];
  return g.nodes[0];
}
template <int F>
constexpr const Attrs& fused_attrs() {
  return chain<F, true>.attrs[static_cast<std::size_t>(fused_node<F>().attr)];
}
// causal & padding: the analytic causal mask plus the whole keep as a dense mask.
static_assert(fused_attrs<kMulPadCausal>().i[0] == 1 && fused_node<kMulPadCausal>().nin == 4);
static_assert(fused_attrs<kMulPadCausal>().f[0] == 0.45 &&
              fused_attrs<kMulPadCausal>().f[1] == kDrop);
// causal alone: no dense mask is left; / 2 is a scale of 0.5.
static_assert(fused_attrs<kDivTransposed>().i[0] == 1 && fused_node<kDivTransposed>().nin == 3);
static_assert(fused_attrs<kDivTransposed>().f[0] == 0.5);
// A bias is score_mod "bias"'s capture; with a padding mask, the keep is mask_mod "keep"'s.
static_assert(fused_attrs<kBias2>().i[4] == 2 && fused_attrs<kBias2>().i[7] == 1 + 16);
static_assert(fused_node<kBias2>().nin == 5 && fused_attrs<kBias4>().i[7] == 1);

// Chains the pass leaves alone.
// The weights read by another op (an entropy-like term): fusing would compute them twice.
constexpr auto weights_read_twice = model([](Builder& g) {
  auto q = input<"q", Shape<kB, kH, seq, kDk>>(g);
  auto v = input<"v", Shape<kB, kH, seq, kDv>>(g);
  auto p = softmax<-1>(matmul_nt(q, q) * 0.5);
  return sum<0, 1, 2, 3>(matmul(p, v)) + sum<0, 1, 2, 3>(p * p);
});
static_assert(weights_read_twice.count(op::attention) == 0);
// keep_unfused on the final matmul.
constexpr auto kept_unfused = model([](Builder& g) {
  auto q = input<"q", Shape<kB, kH, seq, kDk>>(g);
  auto v = input<"v", Shape<kB, kH, seq, kDv>>(g);
  return sum<0, 1, 2, 3>(keep_unfused(matmul(softmax<-1>(matmul_nt(q, q) * 0.5), v)));
});
static_assert(kept_unfused.count(op::attention) == 0);
// A softmax over another axis, and a product that is not q k^T, are not attention.
constexpr auto not_attention = model([](Builder& g) {
  auto q = input<"q", Shape<kB, kH, seq, kDk>>(g);
  auto v = input<"v", Shape<kB, kH, seq, kDv>>(g);
  auto a = matmul(softmax<-2>(matmul_nt(q, q) * 0.5), v);
  auto b = matmul(softmax<-1>(matmul_nt(q, q) * -0.5), v);  // a negative scale
  return sum<0, 1, 2, 3>(a + b);
});
static_assert(not_attention.count(op::attention) == 0);
// The library's layers: fused = false stays the chain.
constexpr auto library_unfused = model([](Builder& g) {
  auto x = input<"x", Shape<kB, seq, 8>>(g);
  auto a = multi_head_attention<2>(g / "attn", x, x, causal_keep<seq>(g), {.fused = false});
  return sum<0, 1, 2>(a.out);
});
static_assert(library_unfused.count(op::attention) == 0);

NamedArrays inputs_of(int form, std::int64_t s, std::uint64_t seed) {
  NamedArrays in{
      {"q", th::random_array(DType::f32, {kB, kH, s, kDk}, seed, -2, 2)},
      {"k", th::random_array(DType::f32, {kB, kH, s, kDk}, seed + 1, -2, 2)},
      {"v", th::random_array(DType::f32, {kB, kH, s, kDv}, seed + 2)},
      {"w", th::random_array(DType::f32, {kB, kH, s, kDv}, seed + 3)},
      // Row 1 keeps about half its keys; a length 0 would mask every query of it.
      {"len", Array::from<std::int32_t>(
                  {kB}, {static_cast<std::int32_t>(s), static_cast<std::int32_t>((s + 1) / 2)})}};
  if (form == kBias2) in["bias"] = th::random_array(DType::f32, {s, s}, seed + 4, -1, 1);
  if (form == kBias4) in["bias"] = th::random_array(DType::f32, {1, kH, s, s}, seed + 4, -1, 1);
  return in;
}

// Sequence lengths: one position, odd sizes, and lengths that cross the 64-wide tiles.
constexpr std::int64_t kLens[] = {1, 7, 13, 130};

// Loss and every gradient output of a training graph on the CPU session.
std::vector<Array> run_cpu(const GraphView& g, const NamedArrays& in, bool training) {
  Session s(g, {.threads = 2, .seed = 3});
  s.set_inputs(in);
  s.run({.training = training, .step = 5});
  std::vector<Array> r{Array::from<float>({}, {static_cast<float>(s.result())})};
  for (const char* name : {"grad/q", "grad/k", "grad/v", "grad/bias"})
    if (g.output(name) >= 0) r.push_back(s.get(name));
  return r;
}

template <int F>
void check_form(const char* what) {
  INFO(what);
  // The fused graph against the f32 and f64 references, with numeric gradients.
  th::check_op({.what = what,
                .forward = chain<F, true>,
                .train = train<F, true>,
                .inputs = [](int b) { return inputs_of(F, kLens[b], 10 + 10 * b); },
                .bindings = 3,
                .eval = {.training = has_drop<F>, .seed = 3, .step = 4}});
  // The fused graph on the CPU against the chain as written (dropout: the same masks).
  for (std::int64_t s : kLens) {
    INFO("seq " << s);
    const NamedArrays in = inputs_of(F, s, 7);
    const std::vector<Array> fused = run_cpu(train<F, true>, in, has_drop<F>);
    const std::vector<Array> chained = run_cpu(train<F, false>, in, has_drop<F>);
    REQUIRE(fused.size() == chained.size());
    for (std::size_t i = 0; i < fused.size(); ++i) {
      INFO("value " << i << " (loss, dq, dk, dv, dbias)");
      th::require_close(fused[i], chained[i], 2e-5 * std::max(1.0, std::abs(chained[0].at(0))));
    }
  }
}

}  // namespace

TEST_CASE("fusion pass: matmul_nt * c, causal & padding keep, dropout", "[op][attention][fuse]") {
  check_form<kMulPadCausal>("matmul_nt(q, k) * c, causal & padding, dropout");
}
TEST_CASE("fusion pass: a transposed k, / c, causal keep", "[op][attention][fuse]") {
  check_form<kDivTransposed>("matmul(q, transpose(k)) / c, causal");
}
TEST_CASE("fusion pass: an additive bias gets its gradient from the kernel",
          "[op][attention][fuse]") {
  check_form<kBias2>("c * q k^T + bias [S, S], causal & padding");
  check_form<kBias4>("q k^T * c + bias [1, H, S, S], dropout");
}

TEST_CASE("fusion pass: weights asked for as an output are recomputed", "[op][attention][fuse]") {
  const NamedArrays in = inputs_of(kWeightsOut, 13, 5);
  Session fused(chain<kWeightsOut, true>, {.threads = 2});
  Session chained(chain<kWeightsOut, false>, {.threads = 2});
  fused.set_inputs(in);
  chained.set_inputs(in);
  fused.run();
  chained.run();
  th::require_close(fused.get("weights"), chained.get("weights"), 1e-6);
  CHECK(fused.result() == Approx(chained.result()).epsilon(1e-5));
  const std::string k = fused.describe_kernels();
  INFO(k);
  CHECK(k.find("own attention (64x64 tiles, causal + keep mask") != std::string::npos);
}

TEST_CASE("fusion pass: a bias runs as score_mod \"bias\" in the tiled kernel",
          "[op][attention][fuse]") {
  Session s(train<kBias2, true>, {.threads = 1});
  s.set_inputs(inputs_of(kBias2, 130, 3));
  s.run();
  const std::string k = s.describe_kernels();
  INFO(k);
  CHECK(k.find("own attention (64x64 tiles, causal, score_mod bias, mask_mod keep") !=
        std::string::npos);
}

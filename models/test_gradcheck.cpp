// Gradient checks of the attention layers and blocks through th::check_op: reference f32 vs f64,
// a central-difference gradcheck (parameters and the float inputs), and the CPU session against
// the reference, on tiny odd sizes with the symbolic dims bound to two sets of values. To add a
// layer: a graph whose loss is sum(layer(x) * w) (w makes every output element count
// differently), its grad<G, "x">(), and one th::check_model().
#include <stag/models/models.hpp>

#include "model_checks.hpp"

namespace {
using namespace stag;
using namespace stag::dims;
using th::f32;
using th::lengths_keep;

// Binding k: (batch, seq) = (3, 5) or (2, 3); the lengths include a full, a partial and (for
// k = 0) an empty row.
constexpr std::int64_t kBatch[2] = {3, 2}, kSeq[2] = {5, 3};
Array keep_for(int k) {
  return k == 0 ? lengths_keep({5, 2, 0}, 5) : lengths_keep({1, 3}, 3);
}

// x [batch, seq, D], w [batch, seq, Dout], keep [batch, seq] for binding k.
NamedArrays x_w_keep(int k, std::int64_t d, std::int64_t d_out, std::uint64_t seed) {
  const std::int64_t b = kBatch[k], s = kSeq[k];
  return {{"x", f32({b, s, d}, seed + k)},
          {"w", f32({b, s, d_out}, seed + 10 + k)},
          {"keep", keep_for(k)}};
}

// ---- attention ----------------------------------------------------------------------------

constexpr auto single_head = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 7>>(g);
  auto w = input<"w", Shape<batch, seq, 5>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  return sum<0, 1, 2>(single_head_attention<3, 5>(g / "attn", x, padding_keep(keep)).out * w);
});
constexpr auto single_head_train = grad<single_head, "x">();

TEST_CASE("single-head attention with d_k != d_v passes gradcheck", "[models][gradcheck]") {
  th::check_model("single_head_attention<3, 5> on [batch, seq, 7], padding mask", single_head,
                  single_head_train, [](int k) { return x_w_keep(k, 7, 5, 100); });
}

enum class Mask { padding, causal, both };

template <Mask M>
constexpr auto mha_self = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 6>>(g);
  auto w = input<"w", Shape<batch, seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  auto mask = [&] {
    if constexpr (M == Mask::padding)
      return padding_keep(keep);
    else if constexpr (M == Mask::causal)
      return causal_keep<seq>(g);
    else
      return padding_keep(keep) & causal_keep<seq>(g);
  }();
  // d_model 6 into 2 heads: head dim 3, odd on purpose.
  return sum<0, 1, 2>(multi_head_attention<2>(g / "mha", x, x, mask).out * w);
});
template <Mask M>
constexpr auto mha_self_train = grad<mha_self<M>, "x">();

TEST_CASE("multi-head self-attention passes gradcheck with padding, causal and both masks",
          "[models][gradcheck]") {
  const auto in = [](int k) { return x_w_keep(k, 6, 6, 200); };
  th::check_model("mha<2>, padding mask", mha_self<Mask::padding>, mha_self_train<Mask::padding>,
                  in);
  th::check_model("mha<2>, causal mask", mha_self<Mask::causal>, mha_self_train<Mask::causal>, in);
  th::check_model("mha<2>, padding & causal", mha_self<Mask::both>, mha_self_train<Mask::both>, in);
}

constexpr auto mha_cross = model([](Builder& g) {
  auto xq = input<"xq", Shape<batch, tgt_seq, 6>>(g);
  auto memory = input<"memory", Shape<batch, src_seq, 6>>(g);
  auto w = input<"w", Shape<batch, tgt_seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, src_seq>, DType::boolean>(g);
  return sum<0, 1, 2>(multi_head_attention<3>(g / "cross", xq, memory, padding_keep(keep)).out * w);
});
constexpr auto mha_cross_train = grad<mha_cross, "xq", "memory">();

TEST_CASE("cross-attention with q_len != k_len passes gradcheck", "[models][gradcheck]") {
  th::check_model("mha<3> cross, tgt_seq 2|4 vs src_seq 5|3", mha_cross, mha_cross_train,
                  [](int k) {
                    const std::int64_t b = kBatch[k], t = k == 0 ? 2 : 4, s = kSeq[k];
                    return NamedArrays{{"xq", f32({b, t, 6}, 300 + k)},
                                       {"memory", f32({b, s, 6}, 310 + k)},
                                       {"w", f32({b, t, 6}, 320 + k)},
                                       {"keep", keep_for(k)}};
                  });
}

constexpr auto rope_only = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 2, seq, 6>>(g);
  auto w = input<"w", Shape<batch, 2, seq, 6>>(g);
  return sum<0, 1, 2, 3>(rope(x, {.theta = 100.0, .offset = 3}) * w);
});
constexpr auto rope_train = grad<rope_only, "x">();

constexpr auto mha_rope = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 8>>(g);
  auto w = input<"w", Shape<batch, seq, 8>>(g);
  const AttentionOptions o{.rope = true, .rope_theta = 100.0};
  return sum<0, 1, 2>(multi_head_attention<2>(g / "mha", x, x, causal_keep<seq>(g), o).out * w);
});
constexpr auto mha_rope_train = grad<mha_rope, "x">();

TEST_CASE("RoPE passes gradcheck, alone and inside attention", "[models][gradcheck]") {
  th::check_model("rope theta 100 offset 3 on [batch, 2, seq, 6]", rope_only, rope_train,
                  [](int k) {
                    return NamedArrays{{"x", f32({kBatch[k], 2, kSeq[k], 6}, 400 + k)},
                                       {"w", f32({kBatch[k], 2, kSeq[k], 6}, 410 + k)}};
                  });
  th::check_model("mha<2> with rope, causal", mha_rope, mha_rope_train, [](int k) {
    NamedArrays in = x_w_keep(k, 8, 8, 420);
    in.erase("keep");
    return in;
  });
}

constexpr auto gqa = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 16>>(g);
  auto w = input<"w", Shape<batch, seq, 16>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  const AttentionOptions o{.bias = false, .rope = true, .rope_theta = 50.0};
  auto mask = padding_keep(keep) & causal_keep<seq>(g);
  return sum<0, 1, 2>(grouped_query_attention<4, 2>(g / "gqa", x, mask, o).out * w);
});
constexpr auto gqa_train = grad<gqa, "x">();

TEST_CASE("grouped-query attention (4 query heads, 2 kv heads, RoPE) passes gradcheck",
          "[models][gradcheck]") {
  th::check_model("gqa<4, 2> on [batch, seq, 16]", gqa, gqa_train,
                  [](int k) { return x_w_keep(k, 16, 16, 500); });
}

}  // namespace

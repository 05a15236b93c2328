// The attention variants of models/attention_variants.hpp in a one-layer language model: each
// compiles to one fused attention op (no [S, S] tensor), its gradients (the learned bias
// tables included) pass a central-difference check, the CPU session equals the reference
// evaluator, the mask_mods keep exactly the pairs their definitions name, and each model fits
// one batch.
#include <catch2/catch.hpp>

#include <stag/models/attention_variants.hpp>
#include <stag/models/layers.hpp>
#include <stag/runtime/gradcheck.hpp>
#include <stag/stag.hpp>

#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto seq = sym<"seq">;
constexpr int kB = 2, kD = 8, kH = 2, kVocab = 11, kBuckets = 8, kRel = 3;

enum Variant { kAlibiWindow, kT5, kShaw, kDocs, kPrefix, kStrided, kSoftcap, kWindowOf };

template <int V>
constexpr auto variant_lm = model([](Builder& g) {
  auto ids = input<"ids", Shape<kB, seq>, i32>(g);
  auto labels = input<"labels", Shape<kB, seq>, i32>(g);
  auto x = token_embedding<kVocab, kD>(g / "embed", ids);
  Scope s = g / "attn";
  auto a = [&] {
    if constexpr (V == kAlibiWindow)
      return flex_self_attention<kH>(s, x, score_mod<"alibi">(variants::alibi, alibi_slopes<kH>(g)),
                                     no_mask_mod, {.mask = AttnMask::sliding_window, .window = 4});
    else if constexpr (V == kT5)
      return flex_self_attention<kH>(s, x,
                                     score_mod<"t5">(variants::t5_relative<kBuckets, 16, false>,
                                                     relative_bias_table<kBuckets, kH>(s)),
                                     no_mask_mod, {.mask = AttnMask::causal});
    else if constexpr (V == kShaw)
      return flex_self_attention<kH>(s, x,
                                     score_mod<"shaw">(variants::shaw_relative<kRel>,
                                                       relative_bias_table<2 * kRel + 1, kH>(s)),
                                     no_mask_mod, {.mask = AttnMask::causal});
    else if constexpr (V == kDocs)
      return flex_self_attention<kH>(
          s, x, no_score_mod,
          mask_mod<"document">(variants::document, input<"docs", Shape<kB, seq>, i32>(g)),
          {.mask = AttnMask::causal});
    else if constexpr (V == kPrefix)
      return flex_self_attention<kH>(
          s, x, no_score_mod,
          mask_mod<"prefix_lm">(variants::prefix_lm, input<"prefix", Shape<kB>, i32>(g)));
    else if constexpr (V == kWindowOf)  // kAlibiWindow with the width an input
      return flex_self_attention<kH>(
          s, x, score_mod<"alibi">(variants::alibi, alibi_slopes<kH>(g)),
          mask_mod<"window">(variants::sliding_window_of, input<"width", Shape<>, i32>(g)));
    else if constexpr (V == kStrided)
      return flex_self_attention<kH>(s, x, no_score_mod, mask_mod<"strided">(variants::strided<3>));
    else
      return flex_self_attention<kH>(s, x, score_mod<"softcap">(variants::softcap<2>), no_mask_mod,
                                     {.mask = AttnMask::causal});
  }();
  auto logits = linear<kVocab>(g / "head", x + a);
  return cross_entropy(logits, labels);
});

template <int V>
constexpr auto variant_train = grad<variant_lm<V>>();

static_assert(variant_lm<kT5>.count(op::attention) == 1);
static_assert(variant_lm<kT5>.count(op::softmax) == 0 && variant_lm<kT5>.count(op::matmul) == 5);
static_assert(variant_train<kShaw>.count(op::attention_backward_kv) == 3);  // dk, dv, table

template <int V>
NamedArrays lm_inputs(std::int64_t s, std::uint64_t seed) {
  NamedArrays in{{"ids", th::random_array(DType::i32, {kB, s}, seed, 0, kVocab - 1)},
                 {"labels", th::random_array(DType::i32, {kB, s}, seed + 1, 0, kVocab - 1)}};
  Array docs(DType::i32, {kB, s});
  for (std::int64_t i = 0; i < s; ++i) {
    docs.set(i, static_cast<double>(i / 5));
    docs.set(s + i, static_cast<double>(i < s / 2 ? 0 : 1));
  }
  if (V == kDocs) in["docs"] = docs;
  if (V == kPrefix)
    in["prefix"] = Array::from_vector<std::int32_t>({kB}, {3, static_cast<std::int32_t>(s / 2)});
  if (V == kWindowOf) in["width"] = Array::from_vector<std::int32_t>({}, {4});
  return in;
}

template <int V>
void check_variant(const char* what) {
  INFO(what);
  for (std::int64_t s : {1, 9, 70}) {
    INFO("S " << s);
    const NamedArrays in = lm_inputs<V>(s, 3 + static_cast<std::uint64_t>(s));
    NamedArrays params = make_params(variant_lm<V>, {}, 5);
    // Non-zero bias tables, so that their gradient check sees a bias.
    for (auto& [name, value] : params)
      if (name.find("rel_bias") != std::string::npos)
        value = th::random_array(value.dtype(), value.dims(), 9, -1, 1);
    if (s < 20) th::require_gradcheck(variant_train<V>, in, params, {});
    const Evaluation want = evaluate_reference(variant_train<V>, in, params, {.f64 = true});
    Session sess(variant_train<V>, {.threads = 2});
    sess.set_params(params);
    sess.set_inputs(in);
    sess.run();
    CHECK(sess.describe_kernels().find("ref:any") == std::string::npos);  // issue 15 §6
    const double loss = want.result().at(0);
    CHECK(std::abs(sess.result() - loss) < 2e-5 * std::max(1.0, std::abs(loss)));
    const GraphView g = variant_train<V>;
    int grads = 0;
    for (const OutputEntry& o : g.outputs)
      if (o.grad_of >= 0) {
        const std::string name = "grad/" + g.name(o.grad_of);
        INFO("gradient " << name);
        th::require_close(sess.get(name), want[name], 1e-4);
        ++grads;
      }
    CHECK(grads >= 9);  // embedding, four projections with biases, head
  }
}

TEST_CASE("variant: ALiBi with a sliding window", "[models][variants][gradcheck]") {
  check_variant<kAlibiWindow>("alibi + window 4");
}
TEST_CASE("variant: T5 relative-position buckets", "[models][variants][gradcheck]") {
  check_variant<kT5>("t5 buckets");
}
TEST_CASE("variant: Shaw relative positions", "[models][variants][gradcheck]") {
  check_variant<kShaw>("shaw, clip 3");
}
TEST_CASE("variant: document mask", "[models][variants][gradcheck]") {
  check_variant<kDocs>("document");
}
TEST_CASE("variant: prefix-LM", "[models][variants][gradcheck]") {
  check_variant<kPrefix>("prefix-lm");
}
TEST_CASE("variant: strided sparse", "[models][variants][gradcheck]") {
  check_variant<kStrided>("strided 3");
}
TEST_CASE("variant: soft-capping", "[models][variants][gradcheck]") {
  check_variant<kSoftcap>("softcap 2");
}
TEST_CASE("variant: a sliding window whose width is an input", "[models][variants][gradcheck]") {
  check_variant<kWindowOf>("alibi + window of width 4 (an input)");
}

TEST_CASE("a window width given at run time equals the compiled one", "[models][variants]") {
  const NamedArrays params = make_params(variant_lm<kAlibiWindow>, {}, 5);
  auto loss_and_kernels = [&](const GraphView& g, const NamedArrays& in) {
    Session s(g, {.threads = 2});
    s.set_params(params);
    s.set_inputs(in);
    s.run();
    return std::pair{s.result(), s.describe_kernels()};
  };
  NamedArrays in = lm_inputs<kWindowOf>(200, 4);
  NamedArrays fixed_in = in;
  fixed_in.erase("width");
  const auto [fixed, fixed_kernels] = loss_and_kernels(variant_lm<kAlibiWindow>, fixed_in);
  const auto [given, given_kernels] = loss_and_kernels(variant_lm<kWindowOf>, in);
  CHECK(given == Approx(fixed).epsilon(1e-6));
  INFO(given_kernels);
  // 200 positions make 4 x 4 tiles; a window of 4 keys touches the 4 diagonal tiles and the 3
  // below them: 7 of 16.
  CHECK(given_kernels.find("block mask per step: 44% of tiles computed") != std::string::npos);
  // Another width, the same graph: a window of 100 keys reaches two tiles back (9 of 16 tiles
  // computed), and the session still equals the reference evaluator.
  in["width"] = Array::from_vector<std::int32_t>({}, {100});
  const auto [wide, wide_kernels] = loss_and_kernels(variant_lm<kWindowOf>, in);
  INFO(wide_kernels);
  const double want =
      evaluate_reference(variant_lm<kWindowOf>, in, params, {.f64 = true}).result().at(0);
  CHECK(std::abs(wide - want) < 2e-5 * std::max(1.0, std::abs(want)));
  CHECK(wide_kernels.find("block mask per step: 56% of tiles computed") != std::string::npos);
}

TEST_CASE("the mask_mods keep the pairs their definitions name", "[models][variants]") {
  auto keys = [](auto mask, std::int64_t q, auto... caps) {
    std::vector<std::int64_t> k;
    for (std::int64_t kv = 0; kv < 10; ++kv)
      if (mask(std::int64_t{1}, std::int64_t{0}, q, kv, caps...)) k.push_back(kv);
    return k;
  };
  using V = std::vector<std::int64_t>;
  // The 3 latest keys, then every third one before them.
  CHECK(keys(variants::strided<3>, 7) == V{1, 4, 5, 6, 7});
  CHECK(keys(variants::sliding_window<4>, 6) == V{3, 4, 5, 6});
  CHECK(keys(variants::sliding_window<4>, 1) == V{0, 1});
  // Row 1's prefix of 3: every query sees keys 0..2, the rest causally.
  const auto prefix = [](std::int64_t b) { return b == 1 ? 3 : 0; };
  CHECK(keys(variants::prefix_lm, 0, prefix) == V{0, 1, 2});
  CHECK(keys(variants::prefix_lm, 5, prefix) == V{0, 1, 2, 3, 4, 5});
  const auto docs = [](std::int64_t, std::int64_t i) { return i < 4 ? 0 : (i < 7 ? 1 : 2); };
  CHECK(keys(variants::document, 5, docs) == V{4, 5, 6});
}

TEST_CASE("T5 buckets: exact near, log-spaced far, one-sided when causal", "[models][variants]") {
  // 8 buckets, max distance 16, causal: distances 0..3 exact, then 4 + floor(log(d / 4) /
  // log(4) * 4) up to bucket 7; keys after the query share bucket 0.
  using variants::t5_bucket;
  CHECK(t5_bucket<8, 16, false>(0) == 0);
  CHECK(t5_bucket<8, 16, false>(-3) == 3);
  CHECK(t5_bucket<8, 16, false>(-4) == 4);
  CHECK(t5_bucket<8, 16, false>(-8) == 6);   // 4 + floor(0.5 * 4)
  CHECK(t5_bucket<8, 16, false>(-15) == 7);  // 4 + floor(0.953 * 4) = 7
  CHECK(t5_bucket<8, 16, false>(-1000) == 7);
  CHECK(t5_bucket<8, 16, false>(5) == 0);
  // Bidirectional: 4 buckets each way, keys after the query from 4 on.
  CHECK(t5_bucket<8, 16, true>(1) == 5);
  CHECK(t5_bucket<8, 16, true>(-1) == 1);
  CHECK(t5_bucket<8, 16, true>(-100) == 3);
}

TEST_CASE("variants fit one batch", "[models][variants][overfit]") {
  auto fit = []<int V>(std::integral_constant<int, V>, const char* what) {
    INFO(what);
    static constexpr auto step_graph = train_step<variant_lm<V>, AdamW{}>();
    const NamedArrays in = lm_inputs<V>(24, 77);
    Session s(step_graph, {.threads = 2, .seed = 1});
    double first = 0, last = 0;
    for (int t = 1; t <= 150; ++t) {
      NamedArrays x = in;
      x["lr"] = Array::from<float>({}, {1e-2f});
      x["step"] = Array::from<float>({}, {static_cast<float>(t)});
      s.set_inputs(x);
      s.run({.training = true, .step = static_cast<std::uint64_t>(t)});
      if (t == 1) first = s.result();
      last = s.result();
    }
    INFO("loss " << first << " -> " << last);
    // Random labels over 11 classes start near ln 11 = 2.4; memorising 48 of them takes the
    // loss far below.
    CHECK(first > 1.8);
    CHECK(last < 0.3 * first);
  };
  fit(std::integral_constant<int, kAlibiWindow>{}, "alibi + window");
  fit(std::integral_constant<int, kT5>{}, "t5");
  fit(std::integral_constant<int, kShaw>{}, "shaw");
  fit(std::integral_constant<int, kDocs>{}, "document");
  fit(std::integral_constant<int, kPrefix>{}, "prefix-lm");
  fit(std::integral_constant<int, kStrided>{}, "strided");
  fit(std::integral_constant<int, kSoftcap>{}, "softcap");
  fit(std::integral_constant<int, kWindowOf>{}, "window of width 4 (an input)");
}

}  // namespace

// causal_mask and padding_mask: against their defining formulas for square and rectangular
// (KV-cache) shapes, symbolic sizes bound to several values, the lengths range check, and
// masks combined with & into a [B, S, S] attention mask.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr auto q_len = sym<"q_len">;
constexpr auto kv_len = sym<"kv_len">;

static_assert(std::is_same_v<decltype(causal_mask<seq>(std::declval<Builder&>())),
                             Tensor<Shape<seq, seq>, boolean>>);
static_assert(std::is_same_v<decltype(causal_mask<1, kv_len>(std::declval<Builder&>())),
                             Tensor<Shape<1, kv_len>, boolean>>);

constexpr auto square = model([](Builder& g) { return causal_mask<5>(g).named("m"); });
constexpr auto block = model([](Builder& g) { return causal_mask<3, 7>(g).named("m"); });
constexpr auto tall = model([](Builder& g) { return causal_mask<7, 3>(g).named("m"); });
constexpr auto symbolic =
    model([](Builder& g) { return causal_mask<q_len, kv_len>(g).named("m"); });

std::vector<double> expected_causal(std::int64_t sq, std::int64_t sk) {
  std::vector<double> out;
  for (std::int64_t q = 0; q < sq; ++q)
    for (std::int64_t k = 0; k < sk; ++k) out.push_back(k <= q + (sk - sq) ? 1 : 0);
  return out;
}

TEST_CASE("causal_mask is lower triangular when square", "[op][masks]") {
  th::require_close(evaluate_reference(square, {}, {})["m"], {1, 0, 0, 0, 0,  //
                                                              1, 1, 0, 0, 0,  //
                                                              1, 1, 1, 0, 0,  //
                                                              1, 1, 1, 1, 0,  //
                                                              1, 1, 1, 1, 1},
                    0);
}

TEST_CASE("causal_mask puts a query block at the end of the keys", "[op][masks]") {
  // Three queries at positions 4, 5, 6 of seven keys.
  th::require_close(evaluate_reference(block, {}, {})["m"], {1, 1, 1, 1, 1, 0, 0,  //
                                                             1, 1, 1, 1, 1, 1, 0,  //
                                                             1, 1, 1, 1, 1, 1, 1},
                    0);
  th::require_close(evaluate_reference(tall, {}, {})["m"], expected_causal(7, 3), 0);
}

TEST_CASE("causal_mask with symbolic sizes bound to several values", "[op][masks]") {
  for (auto [sq, sk] : {std::pair{5, 5}, std::pair{1, 11}, std::pair{13, 7}, std::pair{0, 3}}) {
    EvalOptions o;
    o.dims = {{"q_len", sq}, {"kv_len", sk}};
    const Evaluation e = evaluate_reference(symbolic, {}, {}, o);
    CHECK(e["m"].dims() == std::vector<std::int64_t>{sq, sk});
    th::require_close(e["m"], expected_causal(sq, sk), 0);
  }
}

constexpr auto padding = model([](Builder& g) {
  auto lengths = input<"lengths", Shape<batch>, i32>(g);
  return padding_mask<7>(lengths).named("m");
});

TEST_CASE("padding_mask keeps the first lengths[b] positions", "[op][masks]") {
  const Evaluation e =
      evaluate_reference(padding, {{"lengths", Array::from<std::int32_t>({3}, {0, 3, 7})}}, {});
  th::require_close(e["m"], {0, 0, 0, 0, 0, 0, 0,  //
                             1, 1, 1, 0, 0, 0, 0,  //
                             1, 1, 1, 1, 1, 1, 1},
                    0);
}

TEST_CASE("padding_mask refuses lengths outside [0, S]", "[op][masks]") {
  for (std::int32_t bad : {8, -1}) {
    try {
      evaluate_reference(padding, {{"lengths", Array::from<std::int32_t>({2}, {3, bad})}}, {});
      FAIL("no error");
    } catch (const stag::Error& e) {
      const std::string m = e.what();
      INFO(m);
      CHECK(m.find("m: lengths[1] = " + std::to_string(bad) + " is outside [0, 7] (S = 7") !=
            std::string::npos);
    }
  }
}

// A [batch, seq, seq] attention mask from both: keep[b, q, k] = k <= q && k < lengths[b].
constexpr auto combined = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq>>(g);  // binds batch and seq
  auto lengths = input<"lengths", Shape<batch>, i64>(g);
  auto keep = causal_mask<seq>(g) & unsqueeze<1>(padding_mask<seq>(lengths));
  static_assert(std::is_same_v<decltype(keep), Tensor<Shape<batch, seq, seq>, boolean>>);
  (void)(causal_mask<seq>(g) | unsqueeze<1>(padding_mask<seq>(lengths))).named("either");
  (void)x;
  return keep.named("keep");
});

TEST_CASE("masks combine with & and | for several bindings", "[op][masks]") {
  for (auto [b, s] : {std::pair{2, 5}, std::pair{3, 7}, std::pair{1, 1}}) {
    std::vector<std::int64_t> lens;
    for (std::int64_t i = 0; i < b; ++i) lens.push_back((i * 3 + 2) % (s + 1));
    const NamedArrays in{{"x", Array(DType::f32, {b, s})},
                         {"lengths", Array::from_vector<std::int64_t>({b}, lens)}};
    const Evaluation e = evaluate_reference(combined, in, {});
    std::vector<double> want_and, want_or;
    for (std::int64_t i = 0; i < b; ++i)
      for (std::int64_t q = 0; q < s; ++q)
        for (std::int64_t k = 0; k < s; ++k) {
          want_and.push_back(k <= q && k < lens[static_cast<std::size_t>(i)]);
          want_or.push_back(k <= q || k < lens[static_cast<std::size_t>(i)]);
        }
    th::require_close(e["keep"], want_and, 0);
    th::require_close(e["either"], want_or, 0);
  }
}

constexpr auto masked_attention = model([](Builder& g) {
  auto scores = input<"scores", Shape<batch, seq, seq>>(g);
  auto lengths = input<"lengths", Shape<batch>, i32>(g);
  auto keep = causal_mask<seq>(g) & unsqueeze<1>(padding_mask<seq>(lengths));
  return sum<0, 1, 2>(softmax<-1>(scores, keep) * scores);
});

TEST_CASE("mask nodes feed softmax in f32 and f64 alike", "[op][masks]") {
  th::check_op({.what = "causal & padding masks",
                .forward = masked_attention,
                .train = {},
                .inputs =
                    [](int k) {
                      const std::int64_t b = 2 + k, s = 5 + 2 * k;
                      std::vector<std::int32_t> lens;
                      for (std::int64_t i = 0; i < b; ++i)
                        lens.push_back(static_cast<std::int32_t>((i * 4) % (s + 1)));
                      return NamedArrays{{"scores", th::random_array(DType::f32, {b, s, s}, 5 + k)},
                                         {"lengths", Array::from_vector<std::int32_t>({b}, lens)}};
                    },
                .bindings = 2});
}

}  // namespace

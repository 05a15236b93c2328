// Linear attention (non-causal and causal, multi-head) and additive (Bahdanau) attention: values
// against brute-force loops written here, the causal form row by row against the non-causal one
// over each prefix, gradient checks with the CPU session against the reference, and a one-batch
// overfit of each with Adam.
#include <cmath>
#include <string>
#include <vector>

#include <stag/models/linear_attention.hpp>

#include "model_checks.hpp"

namespace {
using namespace stag;
using namespace stag::dims;
using th::f32;
constexpr auto q_len = sym<"q_len">;
constexpr auto k_len = sym<"k_len">;

// ---- the cores against brute force ---------------------------------------------------------

constexpr auto cores = model([](Builder& g) {
  auto q = input<"q", Shape<batch, 2, seq, 3>>(g);
  auto k = input<"k", Shape<batch, 2, seq, 3>>(g);
  auto v = input<"v", Shape<batch, 2, seq, 4>>(g);
  linear_attention(q, k, v).named("full");
  return causal_linear_attention(q, k, v).named("causal");
});

// The library's non-causal form on q [batch, 2, q_len, 3] against k, v of another length.
constexpr auto cross_core = model([](Builder& g) {
  auto q = input<"q", Shape<batch, 2, q_len, 3>>(g);
  auto k = input<"k", Shape<batch, 2, k_len, 3>>(g);
  auto v = input<"v", Shape<batch, 2, k_len, 4>>(g);
  return linear_attention(q, k, v).named("out");
});

// phi(x) = elu(x) + 1, written as the two branches it is: x + 1 above 0, exp(x) below.
double phi(double x) {
  return x > 0 ? x + 1 : std::exp(x);
}

// out[i] = sum_{j in keys(i)} (phi(q_i) . phi(k_j)) v_j / (sum_j phi(q_i) . phi(k_j) + eps): the
// "attention weights" form, one query at a time; keys(i) = all keys, or j <= i when causal.
// q, k [lead, S, Dk], v [lead, S, Dv] flattened; returns [lead, S, Dv].
std::vector<double> brute_force(const Array& q, const Array& k, const Array& v, std::int64_t lead,
                                std::int64_t s, std::int64_t dk, std::int64_t dv, bool causal) {
  std::vector<double> out(static_cast<std::size_t>(lead * s * dv), 0.0);
  for (std::int64_t l = 0; l < lead; ++l)
    for (std::int64_t i = 0; i < s; ++i) {
      double den = 1e-6;
      std::vector<double> num(static_cast<std::size_t>(dv), 0.0);
      for (std::int64_t j = 0; j < (causal ? i + 1 : s); ++j) {
        double sim = 0;
        for (std::int64_t c = 0; c < dk; ++c)
          sim += phi(q.at((l * s + i) * dk + c)) * phi(k.at((l * s + j) * dk + c));
        den += sim;
        for (std::int64_t c = 0; c < dv; ++c)
          num[static_cast<std::size_t>(c)] += sim * v.at((l * s + j) * dv + c);
      }
      for (std::int64_t c = 0; c < dv; ++c)
        out[static_cast<std::size_t>((l * s + i) * dv + c)] =
            num[static_cast<std::size_t>(c)] / den;
    }
  return out;
}

// x[..., from:to, :] of a rank-4 array (axis 2).
Array slice_seq(const Array& x, std::int64_t from, std::int64_t to) {
  const auto& d = x.dims();
  Array y(x.dtype(), {d[0], d[1], to - from, d[3]});
  std::int64_t n = 0;
  for (std::int64_t a = 0; a < d[0] * d[1]; ++a)
    for (std::int64_t i = from; i < to; ++i)
      for (std::int64_t c = 0; c < d[3]; ++c) y.set(n++, x.at((a * d[2] + i) * d[3] + c));
  return y;
}

TEST_CASE("linear attention, full and causal, against brute force on odd sizes",
          "[models][linear_attention]") {
  for (auto [b, s] : {std::pair<std::int64_t, std::int64_t>{2, 7}, {1, 1}, {3, 5}}) {
    INFO("batch " << b << ", seq " << s);
    // Inputs up to +-2, so that phi takes both branches.
    const Array q = th::random_array(DType::f32, {b, 2, s, 3}, 10 + s, -2, 2);
    const Array k = th::random_array(DType::f32, {b, 2, s, 3}, 20 + s, -2, 2);
    const Array v = th::random_array(DType::f32, {b, 2, s, 4}, 30 + s, -2, 2);
    const Evaluation e = evaluate_reference(cores, {{"q", q}, {"k", k}, {"v", v}}, {});
    th::require_close(e["full"], brute_force(q, k, v, b * 2, s, 3, 4, false), 1e-5);
    th::require_close(e["causal"], brute_force(q, k, v, b * 2, s, 3, 4, true), 1e-5);
  }
}

TEST_CASE("causal linear attention: row i is the non-causal form over keys 0..i",
          "[models][linear_attention]") {
  const std::int64_t b = 2, s = 9;
  const Array q = th::random_array(DType::f32, {b, 2, s, 3}, 41, -2, 2);
  const Array k = th::random_array(DType::f32, {b, 2, s, 3}, 42, -2, 2);
  const Array v = th::random_array(DType::f32, {b, 2, s, 4}, 43, -2, 2);
  const Array causal = evaluate_reference(cores, {{"q", q}, {"k", k}, {"v", v}}, {})["causal"];
  for (std::int64_t i = 0; i < s; ++i) {
    INFO("query " << i);
    const Array row = evaluate_reference(cross_core,
                                         {{"q", slice_seq(q, i, i + 1)},
                                          {"k", slice_seq(k, 0, i + 1)},
                                          {"v", slice_seq(v, 0, i + 1)}},
                                         {})["out"];
    th::require_close(row, slice_seq(causal, i, i + 1), 1e-6);
  }
}

// ---- additive attention against brute force -------------------------------------------------

constexpr auto additive = model([](Builder& g) {
  auto q = input<"q", Shape<batch, tgt_seq, 5>>(g);
  auto keys = input<"keys", Shape<batch, src_seq, 4>>(g);
  auto values = input<"values", Shape<batch, src_seq, 3>>(g);
  auto keep = input<"keep", Shape<batch, src_seq>, DType::boolean>(g);
  return additive_attention<6>(g / "attn", q, keys, values, padding_keep(keep)).out.output("out");
});
static_assert(
    std::is_same_v<decltype(additive_attention<6>(std::declval<Scope>(),
                                                  std::declval<Tensor<Shape<2, 3, 5>>>(),
                                                  std::declval<Tensor<Shape<2, 7, 4>>>(),
                                                  std::declval<Tensor<Shape<2, 7, 9>>>(), no_mask)
                                .weights),
                   Tensor<Shape<2, 3, 7>>>);

TEST_CASE("additive attention against brute force, with padding and an empty row",
          "[models][additive_attention]") {
  const std::int64_t b = 3, t = 2, s = 5, a = 6;
  const NamedArrays in{{"q", f32({b, t, 5}, 51)},
                       {"keys", f32({b, s, 4}, 52)},
                       {"values", f32({b, s, 3}, 53)},
                       {"keep", th::lengths_keep({5, 2, 0}, s)}};
  const NamedArrays p = make_params(additive, {}, 7);
  const Array& wq = p.at("attn.w_q.weight");  // [A, 5]
  const Array& wk = p.at("attn.w_k.weight");  // [A, 4]
  const Array& bk = p.at("attn.w_k.bias");    // [A]
  const Array& va = p.at("attn.v.weight");    // [1, A]
  std::vector<double> want;
  for (std::int64_t n = 0; n < b; ++n)
    for (std::int64_t i = 0; i < t; ++i) {
      std::vector<double> score(static_cast<std::size_t>(s));
      double top = -INFINITY;
      for (std::int64_t j = 0; j < s; ++j) {
        double sc = 0;
        for (std::int64_t u = 0; u < a; ++u) {
          double pre = bk.at(u);
          for (std::int64_t c = 0; c < 5; ++c)
            pre += wq.at(u * 5 + c) * in.at("q").at((n * t + i) * 5 + c);
          for (std::int64_t c = 0; c < 4; ++c)
            pre += wk.at(u * 4 + c) * in.at("keys").at((n * s + j) * 4 + c);
          sc += va.at(u) * std::tanh(pre);
        }
        score[static_cast<std::size_t>(j)] = sc;
        if (in.at("keep").at(n * s + j) != 0) top = std::max(top, sc);
      }
      double z = 0;
      std::vector<double> w(static_cast<std::size_t>(s), 0.0);
      for (std::int64_t j = 0; j < s; ++j)
        if (in.at("keep").at(n * s + j) != 0)
          z += w[static_cast<std::size_t>(j)] = std::exp(score[static_cast<std::size_t>(j)] - top);
      for (std::int64_t c = 0; c < 3; ++c) {
        double o = 0;
        for (std::int64_t j = 0; j < s; ++j)
          if (z > 0)
            o += w[static_cast<std::size_t>(j)] / z * in.at("values").at((n * s + j) * 3 + c);
        want.push_back(o);
      }
    }
  th::require_close(evaluate_reference(additive, in, p)["out"], want, 1e-5);
}

// ---- gradient checks, CPU session against the reference ----------------------------------------

constexpr std::int64_t kBatch[2] = {3, 2}, kSeq[2] = {5, 3};

// snippet-begin: docs-linear-attention-use
template <LinearAttentionForm F>
constexpr auto mhla = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 6>>(g);
  auto w = input<"w", Shape<batch, seq, 6>>(g);
  // d_model 6 into 2 heads: head dim 3, odd on purpose.
  return sum<0, 1, 2>(multi_head_linear_attention<2, F>(g / "la", x, x) * w);
});
// snippet-end: docs-linear-attention-use
template <LinearAttentionForm F>
constexpr auto mhla_train = grad<mhla<F>, "x">();

TEST_CASE("multi-head linear attention, full and causal, passes gradcheck",
          "[models][linear_attention][gradcheck]") {
  const auto in = [](int k) {
    return NamedArrays{{"x", f32({kBatch[k], kSeq[k], 6}, 600 + k)},
                       {"w", f32({kBatch[k], kSeq[k], 6}, 610 + k)}};
  };
  th::check_model("multi_head_linear_attention<2> full", mhla<LinearAttentionForm::full>,
                  mhla_train<LinearAttentionForm::full>, in);
  th::check_model("multi_head_linear_attention<2> causal", mhla<LinearAttentionForm::causal>,
                  mhla_train<LinearAttentionForm::causal>, in);
}

// snippet-begin: docs-additive-attention-use
constexpr auto additive_loss = model([](Builder& g) {
  auto q = input<"q", Shape<batch, tgt_seq, 5>>(g);
  auto keys = input<"keys", Shape<batch, src_seq, 4>>(g);
  auto values = input<"values", Shape<batch, src_seq, 3>>(g);
  auto keep = input<"keep", Shape<batch, src_seq>, DType::boolean>(g);
  auto w = input<"w", Shape<batch, tgt_seq, 3>>(g);
  auto a = additive_attention<4>(g / "attn", q, keys, values, padding_keep(keep));
  return sum<0, 1, 2>(a.out * w);
});
// snippet-end: docs-additive-attention-use
constexpr auto additive_train = grad<additive_loss, "q", "keys", "values">();

TEST_CASE("additive attention with a padding mask passes gradcheck",
          "[models][additive_attention][gradcheck]") {
  th::check_model("additive_attention<4>, padding mask", additive_loss, additive_train, [](int k) {
    const std::int64_t b = kBatch[k], t = k == 0 ? 2 : 4, s = kSeq[k];
    return NamedArrays{
        {"q", f32({b, t, 5}, 700 + k)},
        {"keys", f32({b, s, 4}, 710 + k)},
        {"values", f32({b, s, 3}, 720 + k)},
        {"w", f32({b, t, 3}, 730 + k)},
        {"keep", k == 0 ? th::lengths_keep({5, 2, 0}, 5) : th::lengths_keep({1, 3}, 3)}};
  });
}

// The CPU session at a size where the kernels split work (the gradcheck sizes are tiny).
TEST_CASE("linear attention: the CPU session matches the reference on a larger batch",
          "[models][linear_attention]") {
  const NamedArrays in{{"x", f32({4, 33, 6}, 801)}, {"w", f32({4, 33, 6}, 802)}};
  const GraphView graphs[] = {mhla_train<LinearAttentionForm::full>,
                              mhla_train<LinearAttentionForm::causal>};
  for (const GraphView& g : graphs) {
    Session s(g, {.threads = 2, .seed = 3});
    s.set_inputs(in);
    s.run();
    INFO(s.describe_kernels());
    CHECK(s.describe_kernels().find("ref:any") == std::string::npos);  // issue 15 §6
    const Evaluation ref = evaluate_reference(g, in, s.params());
    CHECK(std::abs(s.result() - ref.result().at(0)) <=
          1e-5 * std::max(1.0, std::abs(ref.result().at(0))));
    for (const OutputEntry& o : g.outputs) th::require_close(s.get(o.node), ref.node(o.node), 2e-5);
  }
}

// ---- one-batch overfit ----------------------------------------------------------------------
// The targets are the outputs of the same network with other parameters (a teacher), so a loss
// of 0 is reachable and a falling loss shows that the gradients train every part of the layer.

template <bool Loss>
constexpr auto la_net = model([](Builder& g) {
  auto x = input<"x", Shape<4, 6, 8>>(g);
  auto h = multi_head_linear_attention<2, LinearAttentionForm::causal>(g / "la", x, x);
  auto pred = linear<8>(g / "out", h + x);
  if constexpr (Loss)
    return mse_loss(pred, input<"y", Shape<4, 6, 8>>(g));
  else
    return pred.output("pred");
});
template <bool Loss>
constexpr auto additive_net = model([](Builder& g) {
  auto q = input<"q", Shape<4, 3, 8>>(g);
  auto m = input<"m", Shape<4, 6, 8>>(g);
  auto a = additive_attention<8>(g / "attn", q, m, linear<8>(g / "values", m), no_mask);
  auto pred = linear<8>(g / "out", a.out);
  if constexpr (Loss)
    return mse_loss(pred, input<"y", Shape<4, 3, 8>>(g));
  else
    return pred.output("pred");
});

// Losses of `steps` Adam steps on one fixed batch, whose targets `y` the teacher (the network
// `teacher` with parameters of seed 1234) computes from the other inputs.
std::vector<double> fit(const GraphView& step_graph, const GraphView& teacher, NamedArrays in,
                        int steps) {
  in["y"] = evaluate_reference(teacher, in, make_params(teacher, {}, 1234))["pred"];
  Session s(step_graph, {.threads = 2, .seed = 9});
  std::vector<double> losses;
  in["lr"] = Array::from<float>({}, {1e-2f});
  for (int t = 1; t <= steps; ++t) {
    in["step"] = Array::from<float>({}, {static_cast<float>(t)});
    s.set_inputs(in);
    s.run({.training = true, .step = static_cast<std::uint64_t>(t)});
    losses.push_back(s.result());
  }
  return losses;
}

TEST_CASE("causal linear attention overfits one batch: loss below a tenth in 100 steps",
          "[models][linear_attention][overfit]") {
  static constexpr auto step = train_step<la_net<true>, AdamW{.weight_decay = 0.0}>();
  const std::vector<double> l = fit(step, la_net<false>, {{"x", f32({4, 6, 8}, 901)}}, 100);
  INFO("loss " << l.front() << " -> " << l[49] << " (step 50) -> " << l.back());
  CHECK(l.back() < 0.1 * l.front());
}

TEST_CASE("additive attention overfits one batch: loss below a tenth in 100 steps",
          "[models][additive_attention][overfit]") {
  static constexpr auto step = train_step<additive_net<true>, AdamW{.weight_decay = 0.0}>();
  const std::vector<double> l =
      fit(step, additive_net<false>, {{"q", f32({4, 3, 8}, 911)}, {"m", f32({4, 6, 8}, 912)}}, 100);
  INFO("loss " << l.front() << " -> " << l[49] << " (step 50) -> " << l.back());
  CHECK(l.back() < 0.1 * l.front());
}

}  // namespace

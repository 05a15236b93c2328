// The autocast pass (autodiff/autocast.hpp): which nodes it casts, at compile time (one cast
// per value however many matmuls read it, scopes, parameters and gradients left f32); bf16
// matmuls on oneDNN against the reference evaluator, forward and backward; bf16 gradients
// against the f32 model's; and a classifier trained in f32 and in bf16 from the same start.
#include <algorithm>
#include <cmath>
#include <sstream>

#include <stag/ops/attention/tiled_bf16.hpp>

#include "harness.hpp"
#include "skip.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

// x -> enc.l1 (bias, relu) -> dec.l2 -> two products with one weight, inside scope `dec`.
constexpr auto mlp = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 12>>(g);
  auto h = relu(linear<24>(g / "enc" / "l1", x));
  auto y = linear<12>(g / "dec" / "l2", h);
  auto tied = param<Shape<12, 12>>(g / "dec", "tied");
  const auto guard = (g / "dec").enter();
  auto z = matmul(y, tied) + matmul_nt(y, tied);  // y and the weight read twice, cast once
  return mean<0, 1, 2>(z * z).named("loss");
});
constexpr auto mlp16 = autocast<mlp>();
constexpr auto dec16 = autocast<mlp, bf16, "dec">();
constexpr auto enc16 = autocast<mlp, bf16, "enc">();
constexpr auto train32 = grad<mlp, "x">();
constexpr auto train16 = grad<mlp16, "x">();

// Every matmul of `g` has operands of dtype `in` and an f32 product; returns how many.
constexpr int matmuls_reading(const GraphView& g, DType in) {
  int n = 0;
  for (int i = 0; i < g.size(); ++i) {
    const Node& nd = g.node(i);
    if (nd.op != op::matmul || nd.flags & kFlagBackward) continue;
    if (g.node(nd.in[0]).dtype == in && g.node(nd.in[1]).dtype == in && nd.dtype == f32) ++n;
  }
  return n;
}

static_assert(mlp.count(op::cast) == 0 && mlp.count(op::matmul) == 4);
// x, l1.weight, relu(h), l2.weight, y and tied: six values, each cast once.
static_assert(mlp16.count(op::cast) == 6);
static_assert(matmuls_reading(mlp16, bf16) == 4);
static_assert(mlp16.find("dec.tied.bf16") >= 0 && mlp16.find("enc.l1.weight.bf16") >= 0);
// Under `dec`: l2 and the two tied products (h, l2.weight, y, tied); under `enc`: l1 only.
static_assert(dec16.count(op::cast) == 4 && matmuls_reading(dec16, bf16) == 3);
static_assert(enc16.count(op::cast) == 2 && matmuls_reading(enc16, bf16) == 1);
static_assert(matmuls_reading(enc16, f32) == 3);
// Parameters and their gradients stay f32; the loss too.
static_assert(train16.view().node(train16.find("dec.tied")).dtype == f32);
static_assert(train16.view().node(train16.output("grad/dec.tied")).dtype == f32);
static_assert(train16.view().node(train16.output("grad/x")).dtype == f32);
static_assert(train16.view().node(train16.result).dtype == f32);
// The backward matmuls read bf16 too (the incoming gradient, cast once per forward matmul)
// and give f32 gradients; no gradient is cast back from bf16.
static_assert(train16.count(op::matmul) == train32.count(op::matmul));
static_assert(matmuls_reading(train16, bf16) == 4);  // forward ones: backward are not counted
constexpr int backward_casts(const GraphView& g, DType to) {
  int n = 0;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op == op::cast && (g.node(i).flags & kFlagBackward) && g.node(i).dtype == to) ++n;
  return n;
}
static_assert(backward_casts(train16, bf16) == 4 && backward_casts(train16, f32) == 0);

NamedArrays mlp_inputs() {
  return {{"x", th::random_array(f32, {3, 5, 12}, 11)}};
}

const char* const kGrads[] = {"grad/x",           "grad/enc.l1.weight",
                              "grad/enc.l1.bias", "grad/dec.l2.weight",
                              "grad/dec.l2.bias", "grad/dec.tied"};

TEST_CASE("bf16 matmuls on oneDNN equal the reference evaluator's", "[autocast]") {
  Session s(train16, {.threads = 2, .seed = 4});
  s.set_inputs(mlp_inputs());
  s.run();
  // Every matmul runs on oneDNN and every cast on the own conversion (lines: name, op,
  // kernel). Where oneDNN has bf16 matmuls (AVX-512 and up) they take the bf16 operands; on an
  // AVX2 CPU the operands are widened to f32 first, and the kernel's name says so.
  const bool bf16_isa = cpu_has_bf16_matmul();
  if (!bf16_isa) WARN("oneDNN has no bf16 matmul on this CPU (it needs AVX-512)");
  std::istringstream lines(s.describe_kernels());
  int matmuls = 0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    if (line.find("  matmul  ") != std::string::npos) {
      ++matmuls;
      CHECK(line.find("onednn matmul") != std::string::npos);
      CHECK((line.find("bf16 widened to f32") == std::string::npos) == bf16_isa);
    }
    if (line.find("  cast  ") != std::string::npos)
      CHECK(line.find("own cast") != std::string::npos);
  }
  CHECK(matmuls == train16.count(op::matmul));
  const Evaluation e = evaluate_reference(train16, mlp_inputs(), s.params());
  // Both multiply the same bf16 values exactly; oneDNN sums in f32, the reference in double, so
  // a value cast to bf16 after a product (relu(h), y, an incoming gradient) may round to the
  // other neighbour: one bf16 step, 2^-7 relative at most, in what depends on it.
  CHECK(std::abs(s.result() - e.result().at(0)) <= 1e-5 * std::abs(e.result().at(0)));
  for (const char* gname : kGrads) {
    INFO(gname);
    CHECK(s.get(gname).dtype() == f32);
    CHECK(th::relative_error(s.get(gname), e[gname]) <= std::ldexp(1.0, -7));
  }
}

TEST_CASE("bf16 gradients follow the f32 model's", "[autocast]") {
  // The same parameters in both graphs; the f32 gradients are checked against central
  // differences in test_autodiff.cpp. Operands and gradients rounded to 8 bits each: a few
  // bf16 steps (2^-8 relative) compound through three layers.
  Session s32(train32, {.threads = 2, .seed = 4});
  s32.set_inputs(mlp_inputs());
  s32.run();
  Session s16(train16, {.threads = 2, .seed = 4});
  s16.set_params(s32.params());
  s16.set_inputs(mlp_inputs());
  s16.run();
  CHECK(std::abs(s16.result() - s32.result()) <= 0.02 * std::abs(s32.result()));
  for (const char* gname : kGrads) {
    INFO(gname);
    const double err = th::relative_error(s16.get(gname), s32.get(gname));
    CHECK(err <= 0.03);
    CHECK(err > 0);  // it did run in bf16
  }
}

// Batched products with broadcast batch dims (attention's shapes, unfused): the VJP's general
// branch, whose f32 products are summed over the broadcast dims.
constexpr auto batched = model([](Builder& g) {
  auto p = input<"p", Shape<1, 3, seq, 4>>(g);
  auto r = input<"r", Shape<batch, 1, 4, seq>>(g);
  auto q = input<"q", Shape<batch, 3, seq, 4>>(g);
  auto s = matmul(p, r) + matmul_nt(q, p);  // both [batch, 3, seq, seq]
  return sum<0, 1, 2, 3>(s * s).named("loss");
});
constexpr auto batched16 = autocast<batched>();
constexpr auto batched_train16 = grad<batched16, "p", "r", "q">();
constexpr auto batched_train32 = grad<batched, "p", "r", "q">();
static_assert(batched16.count(op::cast) == 3);  // p is read twice, cast once

TEST_CASE("bf16 batched matmuls with broadcast batch dims, forward and backward", "[autocast]") {
  const NamedArrays in{{"p", th::random_array(f32, {1, 3, 6, 4}, 21)},
                       {"r", th::random_array(f32, {2, 1, 4, 6}, 22)},
                       {"q", th::random_array(f32, {2, 3, 6, 4}, 23)}};
  Session s16(batched_train16, {.threads = 2});
  s16.set_inputs(in);
  s16.run();
  const Evaluation e = evaluate_reference(batched_train16, in, {});
  Session s32(batched_train32, {.threads = 2});
  s32.set_inputs(in);
  s32.run();
  CHECK(std::abs(s16.result() - e.result().at(0)) <= 1e-5 * std::abs(e.result().at(0)));
  for (const char* gname : {"grad/p", "grad/r", "grad/q"}) {
    INFO(gname);
    CHECK(s16.get(gname).dtype() == f32);
    CHECK(s16.get(gname).dims() == s32.get(gname).dims());
    CHECK(th::relative_error(s16.get(gname), e[gname]) <= std::ldexp(1.0, -7));
    const double err = th::relative_error(s16.get(gname), s32.get(gname));
    CHECK(err <= 0.03);
    CHECK(err > 0);
  }
}

// Hand-written bf16 matmuls give bf16 products; with transposed operands, and a batched one.
// Without bf16 matmuls in oneDNN (AVX2) these widen both operands with their strides, multiply
// in f32 and round the product to bf16 afterwards.
constexpr auto bf16_products = model([](Builder& g) {
  auto a = cast<bf16>(input<"a", Shape<batch, 40, 24>>(g));
  auto b = cast<bf16>(input<"b", Shape<24, 40>>(g));
  auto w = cast<bf16>(input<"w", Shape<40, 24>>(g));
  matmul(a, b).named("ab");                                              // [batch, 40, 40]
  matmul_nt(a, w).named("a_wt");                                         // w read transposed
  matmul_tn(b, cast<bf16>(input<"u", Shape<24, 16>>(g))).named("bt_u");  // b^T u: [40, 16]
  return matmul(a, cast<bf16>(input<"v", Shape<batch, 24, 8>>(g))).named("av");  // batched
});

TEST_CASE("bf16 products of hand-written bf16 matmuls equal the reference's", "[autocast]") {
  const NamedArrays in{{"a", th::random_array(f32, {3, 40, 24}, 31)},
                       {"b", th::random_array(f32, {24, 40}, 32)},
                       {"w", th::random_array(f32, {40, 24}, 33)},
                       {"v", th::random_array(f32, {3, 24, 8}, 34)},
                       {"u", th::random_array(f32, {24, 16}, 35)}};
  Session s(bf16_products, {.threads = 2, .keep = {"ab", "a_wt", "bt_u"}});
  s.set_inputs(in);
  s.run();
  const Evaluation e = evaluate_reference(bf16_products, in, {});
  std::istringstream lines(s.describe_kernels());
  for (std::string line; std::getline(lines, line);)
    if (line.find("  matmul  ") != std::string::npos) {
      INFO(line);
      CHECK(line.find("onednn matmul") != std::string::npos);
    }
  // The same exact bf16 products, summed in f32 and in double and rounded once to bf16: one
  // bf16 step (2^-8 relative) apart at most.
  for (const char* name : {"ab", "a_wt", "bt_u", "av"}) {
    INFO(name);
    REQUIRE(s.get(name).dtype() == bf16);
    const std::vector<double> got = s.get(name).to_doubles(), want = e[name].to_doubles();
    REQUIRE(got.size() == want.size());
    int differ = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i << ": " << got[i] << " against " << want[i]);
      CHECK(std::abs(got[i] - want[i]) <= std::ldexp(std::abs(want[i]), -7) + 1e-6);
      differ += got[i] != want[i];
    }
    CHECK(differ * 20 <= static_cast<int>(got.size()));  // nearly all round the same way
  }
}

// A classifier learns "are most tokens in the lower half of the vocabulary"; f32 and bf16
// runs start from the same parameters and see the same batches.
constexpr ClassifierConfig kSmall{.vocab = 64,
                                  .max_len = 16,
                                  .d_model = 32,
                                  .heads = 2,
                                  .d_ff = 64,
                                  .layers = 1,
                                  .classes = 2,
                                  .dropout = 0.0};
constexpr auto small = model([](Builder& g) { return classifier<kSmall>(g); });
constexpr auto small16 = autocast<small>();
constexpr auto step32 = train_step<small, AdamW{.weight_decay = 0.0}>();
constexpr auto step16 = train_step<small16, AdamW{.weight_decay = 0.0}>();

NamedArrays batch_of(int t) {
  constexpr std::int64_t b = 32, len = 12;
  NamedArrays in{{"ids", th::random_array(i32, {b, len}, 100 + t, 0, 64)},
                 {"keep", Array(DType::boolean, {b, len})},
                 {"label", Array(DType::i32, {b})}};
  for (std::int64_t i = 0; i < b * len; ++i) in["keep"].set(i, 1);
  for (std::int64_t i = 0; i < b; ++i) {
    int low = 0;
    for (std::int64_t j = 0; j < len; ++j) low += in["ids"].at(i * len + j) < 32 ? 1 : 0;
    in["label"].set(i, 2 * low > len ? 1 : 0);
  }
  return in;
}

// The fused attention reads bf16 q, k and v, cast before their head-split views (a projection
// is cast once, contiguously, and the head split stays a view), and gives an f32 output.
constexpr int attention_inputs(const GraphView& g, DType t) {
  int n = 0;
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op == op::attention && g.node(i).dtype == f32)
      for (int k = 0; k < 3; ++k) n += g.node(g.node(i).in[k]).dtype == t;
  return n;
}
// Attention inputs that are views (the head split) of a cast value.
constexpr int views_of_casts(const GraphView& g) {
  int n = 0;
  for (int i = 0; i < g.size(); ++i) {
    if (g.node(i).op != op::attention) continue;
    for (int k = 0; k < 3; ++k) {
      int v = g.node(i).in[k];
      if (g.node(v).op != op::permute && g.node(v).op != op::reshape) continue;
      while (g.node(v).op == op::permute || g.node(v).op == op::reshape) v = g.node(v).in[0];
      n += g.node(v).op == op::cast;
    }
  }
  return n;
}
static_assert(attention_inputs(small, f32) == 3 && attention_inputs(small16, bf16) == 3);
static_assert(views_of_casts(small16) == 3);
constexpr auto small_grad16 = grad<small16>();

// Sets attn::set_bf16_products for the life of a scope, then puts back what was there.
struct Bf16Products {
  explicit Bf16Products(bool on) : before(attn::set_bf16_products(on)) {}
  ~Bf16Products() { attn::set_bf16_products(before); }
  bool before;
};

// How many of a session's attention kernels (forward and backward) are the own tiled kernels
// whose name holds `what`.
int own_attention_with(const Session& s, const std::string& what) {
  std::istringstream lines(s.describe_kernels());
  int n = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find("  attention  ") != std::string::npos ||
        line.find("  attention_backward  ") != std::string::npos)
      n += line.find("own attention") != std::string::npos && line.find(what) != std::string::npos;
  return n;
}

TEST_CASE("the fused attention on bf16 q, k and v equals the reference evaluator's", "[autocast]") {
  NamedArrays in = batch_of(1);
  for (std::int64_t i = 0; i < 32; i += 3) in["keep"].set(i * 12 + 11, 0);  // some padding
  // The kernels that widen q, k and v to f32, which CPUs without AVX512-BF16 run (the bf16
  // tile products are checked against their rounding bound in test_attention_bf16.cpp, and
  // by the next test).
  const Bf16Products widened(false);
  Session s(small_grad16, {.threads = 2, .seed = 4});
  s.set_inputs(in);
  s.run();
  // The own tiled kernels run, forward and backward, on the widened q, k and v.
  std::istringstream lines(s.describe_kernels());
  int attention = 0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    if (line.find("  attention  ") != std::string::npos ||
        line.find("  attention_backward  ") != std::string::npos) {
      ++attention;
      CHECK(line.find("own attention") != std::string::npos);
      CHECK(line.find("bf16 q k v widened to f32") != std::string::npos);
    }
  }
  CHECK(attention == 2);
  const Evaluation e = evaluate_reference(small_grad16, in, s.params());
  // The attention's sums are f32 here and double in the reference; a value rounded to bf16
  // after it (the output projection's operand) may land on the other neighbour: 2^-7.
  CHECK(std::abs(s.result() - e.result().at(0)) <= 1e-5 * std::abs(e.result().at(0)));
  int grads = 0;
  double largest = 0;  // the largest gradient, by the reference
  for (const OutputEntry& o : GraphView(small_grad16).outputs)
    if (o.grad_of >= 0)
      for (double x :
           e[std::string(kGradPrefix) + GraphView(small_grad16).name(o.grad_of)].to_doubles())
        largest = std::max(largest, std::abs(x));
  for (const OutputEntry& o : GraphView(small_grad16).outputs) {
    if (o.grad_of < 0) continue;
    const std::string name = GraphView(small_grad16).name(o.grad_of);
    if (name == "enc.0.self_attn.w_k.bias") {
      // Zero in exact arithmetic: the bias adds q . b to a whole row of scores, which the
      // softmax takes away. Both sides hold rounding noise only.
      for (const Array& a : {s.get(o.node), Array(e[std::string(kGradPrefix) + name])})
        for (double x : a.to_doubles()) CHECK(std::abs(x) <= 1e-5 * largest);
      continue;
    }
    INFO(name);
    ++grads;
    CHECK(s.get(o.node).dtype() == f32);
    CHECK(
        th::relative_error(s.get(o.node),
                           e[std::string(kGradPrefix) + GraphView(small_grad16).name(o.grad_of)]) <=
        std::ldexp(1.0, -7));
  }
  CHECK(grads > 8);
}

TEST_CASE("the fused attention takes bf16 tile products where the CPU has AVX512-BF16",
          "[autocast][bf16]") {
  if (!attn::cpu_has_bf16_dot()) STAG_SKIP("this CPU has no AVX512-BF16");
  NamedArrays in = batch_of(1);
  for (std::int64_t i = 0; i < 32; i += 3) in["keep"].set(i * 12 + 11, 0);
  Session s(small_grad16, {.threads = 2, .seed = 4});
  s.set_inputs(in);
  s.run();
  CHECK(own_attention_with(s, "bf16 tile products") == 2);
  CHECK(own_attention_with(s, "widened") == 0);
  // The loss: the attention's output moves by at most 2^-8 of |v| (P rounded to bf16, the
  // bound of test_attention_bf16.cpp), and through the output projection and the classifier
  // the mean cross-entropy by less than 2^-8 of itself.
  const Evaluation e = evaluate_reference(small_grad16, in, s.params());
  CHECK(std::abs(s.result() - e.result().at(0)) <=
        std::ldexp(1.0, -8) * std::abs(e.result().at(0)));
  CHECK(std::abs(s.result() - e.result().at(0)) > 1e-5 * std::abs(e.result().at(0)));  // rounded
}

// bf16_weights: a tied embedding and output layer, a linear layer with a bias, an RMSNorm.
constexpr auto tied_logits(Builder& g) {
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto table = param<Shape<50, 16>>(g / "tok", "embed");
  auto h = embedding(ids, table);
  h = h + relu(linear<16>(g / "l1", h));
  return matmul_nt(rms_norm_layer(g / "norm", h), table).named("logits");
}
constexpr auto tied_lm = model([](Builder& g) { return tied_logits(g); });
constexpr auto tied_loss = model([](Builder& g) {
  auto y = tied_logits(g);
  return mean<0, 1, 2>(y * y).named("loss");
});
constexpr auto tied16 = autocast<tied_lm>();
// A named object: clang 14 reads a consteval call's temporary Graph as garbage once its view is
// taken (bf16_weights<tied_loss>().view() gave a result index of 791621376).
constexpr auto tied_loss16 = bf16_weights<tied_loss>();
constexpr auto tied_w16 = bf16_weights<tied_lm>();
constexpr DType dtype_of(const auto& g, std::string_view name) {
  return g.view().node(g.find(name)).dtype;
}
// The matmuls' weights (the table through the tied head) are stored in bf16, the bias and the
// norm's gain stay f32; the lookup gives bf16 rows and one cast widens them.
static_assert(dtype_of(tied_w16, "tok.embed") == bf16 && dtype_of(tied_w16, "l1.weight") == bf16);
static_assert(dtype_of(tied_w16, "l1.bias") == f32 && dtype_of(tied_w16, "norm.weight") == f32);
static_assert(dtype_of(tied_lm, "tok.embed") == f32 && dtype_of(tied16, "tok.embed") == f32);
// autocast: embed, l1.weight, h and the normed h cast; now h, the normed h and the lookup.
static_assert(tied16.count(op::cast) == 4 && tied_w16.count(op::cast) == 3);
static_assert(matmuls_reading(tied_w16, bf16) == 2);
constexpr bool no_cast_of_a_parameter(const GraphView& g) {
  for (int i = 0; i < g.size(); ++i)
    if (g.node(i).op == op::cast && (g.node(g.node(i).in[0]).flags & kFlagParam)) return false;
  return true;
}
static_assert(no_cast_of_a_parameter(tied_w16) && !no_cast_of_a_parameter(tied16));

TEST_CASE("bf16_weights gives autocast's results with the weights stored in bf16", "[autocast]") {
  // Weights with bf16 values (as a BF16 checkpoint's): autocast rounds them at every step,
  // bf16_weights once when they are set; both then compute the same thing.
  NamedArrays weights;
  for (const auto& [name, a] : make_params(tied_lm, {}, 3))
    weights.emplace(name, a.to(bf16).to(f32));
  NamedArrays in{{"ids", Array::from<std::int32_t>({2, 3}, {0, 7, 49, 3, 3, 12})}};
  Session s16(tied16, {.threads = 2}), w16(tied_w16, {.threads = 2});
  for (Session* s : {&s16, &w16}) {
    s->set_params(weights);
    s->set_inputs(in);
    s->run();
  }
  CHECK(w16.params().at("tok.embed").dtype() == bf16);
  CHECK(w16.params().at("tok.embed").bytes() * 2 == s16.params().at("tok.embed").bytes());
  const Array a = s16.get("logits"), b = w16.get("logits");
  REQUIRE(a.dims() == b.dims());
  CHECK(a.to_doubles() == b.to_doubles());
  // And the reference evaluator agrees on the bf16-weight graph (sums in double).
  const Evaluation e = evaluate_reference(tied_w16, in, w16.params());
  CHECK(th::relative_error(b, e["logits"]) <= std::ldexp(1.0, -7));
}

TEST_CASE("grad refuses a parameter stored in bf16, by name: bf16_weights is for inference",
          "[autocast]") {
  // At compile time grad<tied_loss16>() stops with this text (tests/compile_fail/
  // grad_bf16_weights.cpp); a graph differentiated at run time gets it as a GraphError.
  Builder b = detail::builder_from(tied_loss16.view());
  CHECK_THROWS_WITH(append_backward(b),
                    Catch::Contains("stag::grad: parameter 'tok.embed' is stored in bf16 "
                                    "(stag::bf16_weights graphs are for inference)"));
  // The first one in the graph's order is named; none of an autocast graph's (f32) is.
  CHECK(detail::bf16_param_text(tied_loss16.view()).n > 0);
  CHECK(detail::bf16_param_text(tied16.view()).n == 0);
}

std::vector<double> curve(const GraphView& g, const NamedArrays& start) {
  Session s(g, {.threads = 2, .seed = 9});
  s.set_params(start);
  std::vector<double> losses;
  for (int t = 1; t <= 60; ++t) {
    NamedArrays in = batch_of(t);
    in["lr"] = Array::from<float>({}, {3e-3f});
    in["step"] = Array::from<float>({}, {static_cast<float>(t)});
    s.set_inputs(in);
    s.run({.training = true, .step = static_cast<std::uint64_t>(t)});
    losses.push_back(s.result());
  }
  return losses;
}

TEST_CASE("a classifier trains to the same loss curve in bf16 as in f32", "[autocast]") {
  const NamedArrays start = make_params(small, {}, 5);
  const std::vector<double> a = curve(step32, start), b = curve(step16, start);
  double worst = 0;
  for (std::size_t t = 0; t < a.size(); ++t) worst = std::max(worst, std::abs(a[t] - b[t]));
  INFO("f32 " << a.front() << " -> " << a.back() << ", bf16 " << b.front() << " -> " << b.back()
              << ", largest step difference " << worst);
  CHECK(a.back() < 0.5 * a.front());  // it learns
  CHECK(b.back() < 0.5 * b.front());
  CHECK(worst <= 0.05);  // nats, at any of the 60 steps
  CHECK(a != b);         // and it ran in bf16
}

}  // namespace

// matmul, matmul_nt and matmul_tn: result types, a hand-multiplied example, products summed
// in the test for rank 2, [B,S,D]@[D,N], attention's [B,H,S,D]@[B,H,D,T] and broadcast batch
// dims under several bindings, and gradients through every VJP branch (the linear-layer
// shortcut, each transpose combination, batch broadcasting on either side).
#include <cstdint>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr auto kv = sym<"kv">;
constexpr int H = 3, D = 4;

template <class A, class B>
using mm_t = decltype(matmul(std::declval<A>(), std::declval<B>()));
template <class A, class B>
using nt_t = decltype(matmul_nt(std::declval<A>(), std::declval<B>()));
template <class A, class B>
using tn_t = decltype(matmul_tn(std::declval<A>(), std::declval<B>()));

static_assert(
    std::is_same_v<mm_t<Tensor<Shape<5, 7>>, Tensor<Shape<7, 11>>>, Tensor<Shape<5, 11>>>);
static_assert(
    std::is_same_v<nt_t<Tensor<Shape<5, 7>>, Tensor<Shape<11, 7>>>, Tensor<Shape<5, 11>>>);
static_assert(
    std::is_same_v<tn_t<Tensor<Shape<7, 5>>, Tensor<Shape<7, 11>>>, Tensor<Shape<5, 11>>>);
static_assert(std::is_same_v<mm_t<Tensor<Shape<batch, seq, 7>>, Tensor<Shape<7, 5>>>,
                             Tensor<Shape<batch, seq, 5>>>);
static_assert(std::is_same_v<nt_t<Tensor<Shape<batch, H, seq, D>>, Tensor<Shape<batch, H, kv, D>>>,
                             Tensor<Shape<batch, H, seq, kv>>>);
static_assert(std::is_same_v<mm_t<Tensor<Shape<batch, H, seq, kv>>, Tensor<Shape<batch, H, kv, D>>>,
                             Tensor<Shape<batch, H, seq, D>>>);
static_assert(std::is_same_v<mm_t<Tensor<Shape<1, H, seq, D>>, Tensor<Shape<batch, 1, D, kv>>>,
                             Tensor<Shape<batch, H, seq, kv>>>);
static_assert(std::is_same_v<mm_t<Tensor<Shape<5, 7>, f64>, Tensor<Shape<batch, 7, 3>, f64>>,
                             Tensor<Shape<batch, 5, 3>, f64>>);

// The same product written three ways: a @ b, a @ (b^T)^T, (a^T)^T @ b.
constexpr auto tiny = model([](Builder& g) {
  auto a = input<"a", Shape<2, 3>>(g);
  auto b = input<"b", Shape<3, 2>>(g);
  auto at = input<"at", Shape<3, 2>>(g);
  auto bt = input<"bt", Shape<2, 3>>(g);
  matmul_nt(a, bt).named("nt");
  matmul_tn(at, b).named("tn");
  return sum<0, 1>(matmul(a, b).named("nn"));
});

TEST_CASE("matmul on a hand-multiplied 2x3 @ 3x2", "[op][matmul]") {
  // [[1,2,3],[4,5,6]] @ [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  const NamedArrays in{{"a", Array::from<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                       {"b", Array::from<float>({3, 2}, {7, 8, 9, 10, 11, 12})},
                       {"at", Array::from<float>({3, 2}, {1, 4, 2, 5, 3, 6})},
                       {"bt", Array::from<float>({2, 3}, {7, 9, 11, 8, 10, 12})}};
  const Evaluation e = evaluate_reference(tiny, in, {});
  for (const char* form : {"nn", "nt", "tn"}) {
    INFO(form);
    th::require_close(e[form], {58, 64, 139, 154}, 0);
  }
  th::require_close(e.result(), {58 + 64 + 139 + 154}, 0);
}

// out[bi][m][n] = sum_k a(bi, m, k) * b(bi, k, n), summed here in double.
template <class A, class B>
std::vector<double> product(std::int64_t batches, std::int64_t M, std::int64_t K, std::int64_t N,
                            A a, B b) {
  std::vector<double> out;
  for (std::int64_t bi = 0; bi < batches; ++bi)
    for (std::int64_t m = 0; m < M; ++m)
      for (std::int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (std::int64_t k = 0; k < K; ++k) acc += a(bi, m, k) * b(bi, k, n);
        out.push_back(acc);
      }
  return out;
}

constexpr auto forms = model([](Builder& g) {
  auto a = input<"a", Shape<5, 7>>(g);
  auto b = input<"b", Shape<7, 11>>(g);
  auto bt = input<"bt", Shape<11, 7>>(g);
  auto at = input<"at", Shape<7, 5>>(g);
  auto x = input<"x", Shape<batch, seq, 7>>(g);
  auto q = input<"q", Shape<batch, H, seq, D>>(g);
  auto k = input<"k", Shape<batch, H, kv, D>>(g);
  auto kt = input<"kt", Shape<batch, H, D, kv>>(g);
  auto p = input<"p", Shape<1, H, seq, D>>(g);
  auto r = input<"r", Shape<batch, 1, D, kv>>(g);
  matmul(a, b).named("ab");
  matmul_nt(a, bt).named("a_bt");
  matmul_tn(at, b).named("at_b");
  matmul(x, b).named("xb");
  matmul_nt(q, k).named("qk");
  matmul(q, kt).named("q_kt");
  matmul(p, r).named("pr");
  return sum<0, 1, 2>(matmul(a, matmul_tn(x, x)).named("a_xtx"));
});

TEST_CASE("matmul forms against sums in the test, several bindings", "[op][matmul]") {
  struct Dims {
    std::int64_t b, s, t;
  };
  for (const Dims d : {Dims{2, 5, 7}, Dims{1, 13, 11}, Dims{3, 1, 2}}) {
    INFO("batch " << d.b << ", seq " << d.s << ", kv " << d.t);
    const NamedArrays in{{"a", th::random_array(DType::f32, {5, 7}, 1)},
                         {"b", th::random_array(DType::f32, {7, 11}, 2)},
                         {"bt", th::random_array(DType::f32, {11, 7}, 3)},
                         {"at", th::random_array(DType::f32, {7, 5}, 4)},
                         {"x", th::random_array(DType::f32, {d.b, d.s, 7}, 5)},
                         {"q", th::random_array(DType::f32, {d.b, H, d.s, D}, 6)},
                         {"k", th::random_array(DType::f32, {d.b, H, d.t, D}, 7)},
                         {"kt", th::random_array(DType::f32, {d.b, H, D, d.t}, 8)},
                         {"p", th::random_array(DType::f32, {1, H, d.s, D}, 9)},
                         {"r", th::random_array(DType::f32, {d.b, 1, D, d.t}, 10)}};
    const Evaluation e = evaluate_reference(forms, in, {});
    auto at = [&](const char* name) {
      return [&a = in.at(name)](std::int64_t i) { return a.at(i); };
    };
    const auto A = at("a"), B = at("b"), BT = at("bt"), AT = at("at"), X = at("x"), Q = at("q"),
               K = at("k"), KT = at("kt"), P = at("p"), R = at("r");
    const double tol = 1e-5;
    th::require_close(e["ab"],
                      product(
                          1, 5, 7, 11, [&](auto, auto m, auto k) { return A(m * 7 + k); },
                          [&](auto, auto k, auto n) { return B(k * 11 + n); }),
                      tol);
    th::require_close(e["a_bt"],
                      product(
                          1, 5, 7, 11, [&](auto, auto m, auto k) { return A(m * 7 + k); },
                          [&](auto, auto k, auto n) { return BT(n * 7 + k); }),
                      tol);
    th::require_close(e["at_b"],
                      product(
                          1, 5, 7, 11, [&](auto, auto m, auto k) { return AT(k * 5 + m); },
                          [&](auto, auto k, auto n) { return B(k * 11 + n); }),
                      tol);
    // [B, S, 7] @ [7, 11]: every (batch, seq) row times b.
    th::require_close(
        e["xb"],
        product(
            d.b, d.s, 7, 11, [&](auto bi, auto m, auto k) { return X((bi * d.s + m) * 7 + k); },
            [&](auto, auto k, auto n) { return B(k * 11 + n); }),
        tol);
    // Attention scores: batch index bi runs over (batch, head) pairs.
    th::require_close(e["qk"],
                      product(
                          d.b * H, d.s, D, d.t,
                          [&](auto bi, auto m, auto k) { return Q((bi * d.s + m) * D + k); },
                          [&](auto bi, auto k, auto n) { return K((bi * d.t + n) * D + k); }),
                      tol);
    th::require_close(e["q_kt"],
                      product(
                          d.b * H, d.s, D, d.t,
                          [&](auto bi, auto m, auto k) { return Q((bi * d.s + m) * D + k); },
                          [&](auto bi, auto k, auto n) { return KT((bi * D + k) * d.t + n); }),
                      tol);
    // [1, H, S, D] @ [B, 1, D, T]: p is shared across the batch, r across heads.
    th::require_close(e["pr"],
                      product(
                          d.b * H, d.s, D, d.t,
                          [&](auto bi, auto m, auto k) { return P(((bi % H) * d.s + m) * D + k); },
                          [&](auto bi, auto k, auto n) { return R(((bi / H) * D + k) * d.t + n); }),
                      tol);
    CHECK(e["pr"].dims() == std::vector<std::int64_t>{d.b, H, d.s, d.t});
    // [5, 7] @ (x^T x) [B, 7, 7]: the rank-2 operand broadcast over the batch.
    const std::vector<double> xtx = product(
        d.b, 7, d.s, 7, [&](auto bi, auto m, auto k) { return X((bi * d.s + k) * 7 + m); },
        [&](auto bi, auto k, auto n) { return X((bi * d.s + k) * 7 + n); });
    th::require_close(e["a_xtx"],
                      product(
                          d.b, 5, 7, 7, [&](auto, auto m, auto k) { return A(m * 7 + k); },
                          [&](auto bi, auto k, auto n) {
                            return xtx[static_cast<std::size_t>((bi * 7 + k) * 7 + n)];
                          }),
                      1e-4);
  }
}

// Every VJP branch: the linear-layer shortcut with and without a transposed weight, nt and tn
// on batched operands, broadcast batch dims on both sides, rank-2 @ rank-3, and a^T @ b^T
// (no typed front-end; built with the untyped op).
constexpr auto mm_loss = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 7>>(g);
  auto w = input<"w", Shape<7, 5>>(g);
  auto v = input<"v", Shape<5, 7>>(g);
  auto q = input<"q", Shape<batch, H, seq, D>>(g);
  auto k = input<"k", Shape<batch, H, kv, D>>(g);
  auto vv = input<"vv", Shape<batch, H, kv, D>>(g);
  auto p = input<"p", Shape<1, H, seq, D>>(g);
  auto r = input<"r", Shape<batch, 1, D, kv>>(g);
  auto u = input<"u", Shape<7, 5>>(g);
  auto z = input<"z", Shape<7, 3>>(g);
  auto m = input<"m", Shape<5, 7>>(g);
  auto y1 = matmul(x, w);                 // [batch, seq, 5]
  auto y2 = matmul_nt(x, v);              // [batch, seq, 5]
  auto y3 = matmul(matmul_nt(q, k), vv);  // [batch, H, seq, D]
  auto y4 = matmul(p, r);                 // [batch, H, seq, kv]
  auto y5 = matmul_tn(u, z);              // [5, 3]
  auto y6 = matmul_tn(x, y1 + y2);        // [batch, 7, 5]
  auto y7 = matmul(m, y6);                // [batch, 5, 5]
  auto y8 = Tensor<Shape<5, 5>>{&g, matmul(u.ref(), m.ref(), true, true).id};  // u^T @ m^T
  return sum<0, 1, 2>(y1 * y2) + sum<0, 1, 2, 3>(y3 * y3) + sum<0, 1, 2, 3>(y4 * y4) +
         sum<0, 1>(y5 * y5) + sum<0, 1, 2>(y7 * y7) + sum<0, 1>(y8 * y8);
});
constexpr auto mm_train = grad<mm_loss, "x", "w", "v", "q", "k", "vv", "p", "r", "u", "z", "m">();
static_assert(mm_train.shape(mm_train.output("grad/p")) == Shape<1, H, seq, D>::value);
static_assert(mm_train.shape(mm_train.output("grad/r")) == Shape<batch, 1, D, kv>::value);
static_assert(mm_train.shape(mm_train.output("grad/m")) == Shape<5, 7>::value);

TEST_CASE("matmul forms on odd shapes and several bindings", "[op][matmul][gradcheck]") {
  const std::int64_t dims[][3] = {{2, 5, 7}, {1, 11, 13}, {3, 1, 2}};
  th::check_op({.what = "matmul, matmul_nt, matmul_tn, broadcast batches",
                .forward = mm_loss,
                .train = mm_train,
                .inputs =
                    [&](int c) {
                      const std::int64_t b = dims[c][0], s = dims[c][1], t = dims[c][2];
                      const std::uint64_t seed = 100 * static_cast<std::uint64_t>(c);
                      return NamedArrays{
                          {"x", th::random_array(DType::f32, {b, s, 7}, seed + 1)},
                          {"w", th::random_array(DType::f32, {7, 5}, seed + 2)},
                          {"v", th::random_array(DType::f32, {5, 7}, seed + 3)},
                          {"q", th::random_array(DType::f32, {b, H, s, D}, seed + 4)},
                          {"k", th::random_array(DType::f32, {b, H, t, D}, seed + 5)},
                          {"vv", th::random_array(DType::f32, {b, H, t, D}, seed + 6)},
                          {"p", th::random_array(DType::f32, {1, H, s, D}, seed + 7)},
                          {"r", th::random_array(DType::f32, {b, 1, D, t}, seed + 8)},
                          {"u", th::random_array(DType::f32, {7, 5}, seed + 9)},
                          {"z", th::random_array(DType::f32, {7, 3}, seed + 10)},
                          {"m", th::random_array(DType::f32, {5, 7}, seed + 11)}};
                    },
                .bindings = 3});
}

// A tall transposed left operand with a narrow product (a weight's gradient dy^T x): the CPU
// kernel copies A^T into row-major order first (at least 1024 rows, at most 256 columns), with
// and without a folded bias. 1000 rows stay on oneDNN's transposed path.
constexpr auto rows = sym<"rows">;
constexpr auto tall_tn = model([](Builder& g) {
  auto at = input<"at", Shape<seq, rows>>(g);  // A^T, stored [K, M]
  auto b = input<"b", Shape<seq, 5>>(g);
  auto c = input<"c", Shape<5>>(g);
  auto y = matmul_tn(at, b);      // [rows, 5]
  auto yb = at * 0.5f;            // a second, scaled operand
  auto z = matmul_tn(yb, b) + c;  // bias folded into the staged product
  return sum<0, 1>(y * y) + sum<0, 1>(z * z);
});
constexpr std::int64_t kTall[][2] = {{1030, 37}, {1024, 300}, {1000, 5}};  // rows, K

NamedArrays tall_inputs(int k) {
  const std::int64_t m = kTall[k][0], kk = kTall[k][1];
  const std::uint64_t seed = 500 + 10 * static_cast<std::uint64_t>(k);
  return NamedArrays{{"at", th::random_array(DType::f32, {kk, m}, seed + 1)},
                     {"b", th::random_array(DType::f32, {kk, 5}, seed + 2)},
                     {"c", th::random_array(DType::f32, {5}, seed + 3)}};
}

TEST_CASE("matmul_tn with a tall transposed operand, staged into row-major order", "[op][matmul]") {
  th::check_op({.what = "matmul_tn, tall A^T",
                .forward = tall_tn,
                .train = {},
                .inputs = tall_inputs,
                .bindings = 3});
  for (int k = 0; k < 3; ++k) {
    Session s(tall_tn, {.threads = 2});
    s.set_inputs(tall_inputs(k));
    s.run();
    const std::string kernels = s.describe_kernels();
    INFO("rows " << kTall[k][0] << "\n" << kernels);
    std::size_t staged = 0;
    for (auto f = kernels.find("A^T staged"); f != std::string::npos;
         f = kernels.find("A^T staged", f + 1))
      ++staged;
    CHECK(staged == (kTall[k][0] >= 1024 ? 2u : 0u));
  }
}

}  // namespace

// score_mod and mask_mod of the fused attention: for ALiBi with learned slopes, a learned
// relative-position table (Shaw clipping), soft-capping, a document mask over i32 ids and a
// user-written sliding window, each alone and combined with the built-in masks: the reference
// in f32 vs f64, central-difference gradients (q, k, v and the captured float tensors), the
// tiled CPU kernel vs the reference over odd, tile-crossing and unequal lengths with grouped
// heads; fused vs an unfused chain whose bias or keep mask is computed here independently; the
// block mask's skipped tiles; and a read outside a captured tensor.
#include <algorithm>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto sq = sym<"sq">;
constexpr auto sk = sym<"sk">;
constexpr int kB = 2, kH = 4, kKvh = 2, kDk = 5, kDv = 3, kRel = 3;

constexpr auto alibi = [](auto s, auto, auto h, auto q, auto kv, auto slopes) {
  return s - slopes(h) * (q - kv);
};
// Shaw et al.: a learned bias per head and clipped relative distance.
constexpr auto relative = [](auto s, auto, auto h, auto q, auto kv, auto table) {
  const std::int64_t r = std::clamp<std::int64_t>(kv - q, -kRel, kRel);
  return s + table(r + kRel, h);
};
constexpr auto softcap = [](auto s, auto...) { return 2.0 * tanh(s / 2.0); };
constexpr auto same_doc = [](auto b, auto, auto q, auto kv, auto docs) {
  return docs(b, q) == docs(b, kv);
};
constexpr auto window4 = [](auto, auto, auto q, auto kv) { return kv <= q && q - kv < 4; };

enum Case {
  kAlibi,
  kRelative,
  kSoftcap,
  kDocs,
  kWindow,
  kAlibiDocs,
  kBuiltinAlibi,
  kBuiltinSoftcap
};

template <int C>
constexpr auto mods_loss = model([](Builder& g) {
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  auto w = input<"w", Shape<kB, kH, sq, kDv>>(g);
  auto o = [&] {
    if constexpr (C == kAlibi) {
      auto slopes = input<"slopes", Shape<kH>>(g);
      return sdpa(q, k, v, score_mod<"alibi">(alibi, slopes), {.mask = AttnMask::causal});
    } else if constexpr (C == kRelative) {
      auto table = input<"table", Shape<2 * kRel + 1, kH>>(g);
      return sdpa(q, k, v, score_mod<"relative">(relative, table));
    } else if constexpr (C == kSoftcap) {
      return sdpa(q, k, v, score_mod<"softcap">(softcap), {.mask = AttnMask::causal});
    } else if constexpr (C == kDocs) {
      auto docs = input<"docs", Shape<kB, sk>, i32>(g);
      return sdpa(q, k, v, mask_mod<"document">(same_doc, docs), {.mask = AttnMask::causal});
    } else if constexpr (C == kWindow) {
      return sdpa(q, k, v, mask_mod<"window4">(window4));
    } else if constexpr (C == kBuiltinAlibi) {
      return sdpa(q, k, v, {.mask = AttnMask::causal, .score = AttnScore::alibi});
    } else if constexpr (C == kBuiltinSoftcap) {
      return sdpa(q, k, v, {.mask = AttnMask::causal, .score = AttnScore::softcap, .softcap = 2});
    } else {
      auto slopes = input<"slopes", Shape<kH>>(g);
      auto docs = input<"docs", Shape<kB, sk>, i32>(g);
      return sdpa(q, k, v, score_mod<"alibi">(alibi, slopes), mask_mod<"document">(same_doc, docs),
                  {.mask = AttnMask::causal});
    }
  }();
  return sum<0, 1, 2, 3>(o * w);
});
template <int C>
constexpr bool has_slopes = C == kAlibi || C == kAlibiDocs;
template <int C>
constexpr auto mods_train = [] {
  // (the built-in cases have no captured tensors: the last branch)
  if constexpr (has_slopes<C>)
    return grad<mods_loss<C>, "q", "k", "v", "slopes">();
  else if constexpr (C == kRelative)
    return grad<mods_loss<C>, "q", "k", "v", "table">();
  else
    return grad<mods_loss<C>, "q", "k", "v">();
}();

static_assert(mods_loss<kAlibi>.count(op::attention) == 1);
static_assert(mods_loss<kAlibi>.count(op::softmax) == 0);
// dq, dk, dv and the slopes' gradient: one backward node and three that hand gradients out.
static_assert(mods_train<kAlibi>.count(op::attention_backward) == 1);
static_assert(mods_train<kAlibi>.count(op::attention_backward_kv) == 3);
// The document ids are integers: no gradient for them.
static_assert(mods_train<kDocs>.count(op::attention_backward_kv) == 2);

// Document ids of row b: runs of lengths that cross tiles (row 1 has one long document).
Array docs_of(std::int64_t s) {
  Array d(DType::i32, {kB, s});
  for (std::int64_t i = 0; i < s; ++i) {
    d.set(i, static_cast<double>(i / 9 + (i > 70 ? 5 : 0)));
    d.set(s + i, static_cast<double>(i < s / 3 ? 0 : 1));
  }
  return d;
}

template <int C>
NamedArrays mods_inputs(std::int64_t s_q, std::int64_t s_k, std::uint64_t seed) {
  NamedArrays in{{"q", th::random_array(DType::f32, {kB, kH, s_q, kDk}, seed, -2, 2)},
                 {"k", th::random_array(DType::f32, {kB, kKvh, s_k, kDk}, seed + 1, -2, 2)},
                 {"v", th::random_array(DType::f32, {kB, kKvh, s_k, kDv}, seed + 2)},
                 {"w", th::random_array(DType::f32, {kB, kH, s_q, kDv}, seed + 3)}};
  if constexpr (has_slopes<C>) in["slopes"] = th::random_array(DType::f32, {kH}, seed + 4, 0.1, 1);
  if constexpr (C == kRelative)
    in["table"] = th::random_array(DType::f32, {2 * kRel + 1, kH}, seed + 4, -1, 1);
  if constexpr (C == kDocs || C == kAlibiDocs) in["docs"] = docs_of(s_k);
  return in;
}

// (Sq, Sk): one position, odd sizes, lengths that cross tiles; unequal lengths where the
// function does not index per-query tensors by key position (the document ids are per key).
constexpr std::pair<std::int64_t, std::int64_t> kLens[] = {{1, 1}, {7, 7}, {13, 29}, {130, 130}};
constexpr std::pair<std::int64_t, std::int64_t> kSquare[] = {{1, 1}, {7, 7}, {13, 13}, {130, 130}};

template <int C>
void check_mods_op(const char* what) {
  constexpr bool square = C == kDocs || C == kAlibiDocs;
  th::check_op({.what = what,
                .forward = mods_loss<C>,
                .train = mods_train<C>,
                .inputs =
                    [](int b) {
                      const auto [s_q, s_k] = square ? kSquare[b] : kLens[b];
                      return mods_inputs<C>(s_q, s_k, 10 + 10 * static_cast<std::uint64_t>(b));
                    },
                .bindings = 4});
}

TEST_CASE("score_mod: ALiBi with learned slopes, causal", "[op][attention][mods][gradcheck]") {
  check_mods_op<kAlibi>("sdpa, score_mod alibi, causal");
}
TEST_CASE("score_mod: a learned relative-position table", "[op][attention][mods][gradcheck]") {
  check_mods_op<kRelative>("sdpa, score_mod relative");
}
TEST_CASE("score_mod: soft-capping", "[op][attention][mods][gradcheck]") {
  check_mods_op<kSoftcap>("sdpa, score_mod softcap, causal");
}
TEST_CASE("mask_mod: document ids with the causal mask", "[op][attention][mods][gradcheck]") {
  check_mods_op<kDocs>("sdpa, mask_mod document, causal");
}
TEST_CASE("mask_mod: a sliding window written by the user", "[op][attention][mods][gradcheck]") {
  check_mods_op<kWindow>("sdpa, mask_mod window");
}
TEST_CASE("score_mod and mask_mod together", "[op][attention][mods][gradcheck]") {
  check_mods_op<kAlibiDocs>("sdpa, alibi + document");
}
TEST_CASE("built-in scores: ALiBi and soft-capping", "[op][attention][mods][gradcheck]") {
  check_mods_op<kBuiltinAlibi>("sdpa, built-in alibi, causal");
  check_mods_op<kBuiltinSoftcap>("sdpa, built-in softcap, causal");
}

// ---- against an unfused chain whose bias and mask are computed here ---------------------------

constexpr auto unfused_loss = model([](Builder& g) {
  g.fuse_attention = false;  // the chain as written, not the fusion pass's op
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  auto bias = input<"bias", Shape<1, kH, sq, sk>>(g);
  auto keep = input<"keep", Shape<kB, 1, sq, sk>, boolean>(g);
  auto w = input<"w", Shape<kB, kH, sq, kDv>>(g);
  auto kr = view<kB, kH, sk, kDk>(expand<kB, kKvh, kH / kKvh, sk, kDk>(unsqueeze<2>(k)));
  auto vr = view<kB, kH, sk, kDv>(expand<kB, kKvh, kH / kKvh, sk, kDv>(unsqueeze<2>(v)));
  auto scores = matmul_nt(q, kr) * (1.0 / cx::sqrt(static_cast<double>(kDk))) + bias;
  return sum<0, 1, 2, 3>(matmul(softmax<-1>(scores, keep), vr) * w);
});
constexpr auto unfused_train = grad<unfused_loss, "q", "k", "v", "bias">();

std::vector<Array> run_cpu(const GraphView& g, const NamedArrays& in,
                           std::initializer_list<const char*> grads) {
  Session s(g, {.threads = 2});
  s.set_inputs(in);
  s.run();
  std::vector<Array> r{Array::from<float>({}, {static_cast<float>(s.result())})};
  for (const char* n : grads) r.push_back(s.get(std::string("grad/") + n));
  return r;
}

TEST_CASE("score_mod ALiBi + mask_mod documents equal the unfused chain, slopes' gradient too",
          "[op][attention][mods]") {
  for (const auto& [s_q, s_k] : kSquare) {
    INFO("S " << s_q);
    NamedArrays in = mods_inputs<kAlibiDocs>(s_q, s_k, 5);
    const std::vector<Array> fused = run_cpu(mods_train<kAlibiDocs>, in, {"q", "k", "v", "slopes"});
    // The bias -slope_h (q - kv) and the keep mask (causal, docs(b, q) == docs(b, kv)), written
    // out.
    Array bias(DType::f32, {1, kH, s_q, s_k}), keep(DType::boolean, {kB, 1, s_q, s_k});
    for (std::int64_t h = 0; h < kH; ++h)
      for (std::int64_t i = 0; i < s_q; ++i)
        for (std::int64_t j = 0; j < s_k; ++j)
          bias.set((h * s_q + i) * s_k + j, -in["slopes"].at(h) * static_cast<double>(i - j));
    for (std::int64_t b = 0; b < kB; ++b)
      for (std::int64_t i = 0; i < s_q; ++i)
        for (std::int64_t j = 0; j < s_k; ++j)
          keep.set((b * s_q + i) * s_k + j,
                   j <= i && in["docs"].at(b * s_k + i) == in["docs"].at(b * s_k + j));
    const NamedArrays chain{{"q", in["q"]}, {"k", in["k"]}, {"v", in["v"]},
                            {"w", in["w"]}, {"bias", bias}, {"keep", keep}};
    const std::vector<Array> unfused = run_cpu(unfused_train, chain, {"q", "k", "v", "bias"});
    for (std::size_t i = 0; i < 4; ++i) {
      INFO("value " << i << " (loss, dq, dk, dv)");
      th::require_close(fused[i], unfused[i], 2e-5 * std::max(1.0, std::abs(unfused[0].at(0))));
    }
    // d slope_h = sum over (q, kv) of dbias[h, q, kv] * -(q - kv).
    std::vector<double> want(kH, 0.0);
    for (std::int64_t h = 0; h < kH; ++h)
      for (std::int64_t i = 0; i < s_q; ++i)
        for (std::int64_t j = 0; j < s_k; ++j)
          want[static_cast<std::size_t>(h)] +=
              unfused[4].at((h * s_q + i) * s_k + j) * -static_cast<double>(i - j);
    th::require_close(fused[4], Array::from_vector<double>({kH}, want).to(DType::f32), 2e-4);
  }
}

TEST_CASE("mask_mod's block mask skips the tiles it rules out and says how many it computed",
          "[op][attention][mods]") {
  // 260 positions, 5 x 5 tiles. Row 0 has documents of 9 positions, so (with the causal mask)
  // only the diagonal tiles hold a kept pair; row 1 has two documents, [0, 86) and [86, 260),
  // so the tiles of queries from 128 on against keys below 64 hold none. The tiles holding a
  // kept pair are counted here by brute force.
  const std::int64_t s = 260, nt = 5;
  NamedArrays in = mods_inputs<kDocs>(s, s, 3);
  std::int64_t want = 0;
  for (std::int64_t b = 0; b < kB; ++b)
    for (std::int64_t qt = 0; qt < nt; ++qt)
      for (std::int64_t kt = 0; kt < nt; ++kt) {
        bool any = false;
        for (std::int64_t i = qt * 64; i < std::min(s, qt * 64 + 64); ++i)
          for (std::int64_t j = kt * 64; j < std::min(s, kt * 64 + 64); ++j)
            any = any || (j <= i && in["docs"].at(b * s + i) == in["docs"].at(b * s + j));
        want += any ? kH : 0;
      }
  Session sess(mods_train<kDocs>, {.threads = 2});
  sess.set_inputs(in);
  sess.run();
  const std::string k = sess.describe_kernels();
  INFO(k);
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%% of tiles computed",
                100.0 * static_cast<double>(want) / static_cast<double>(kB * kH * nt * nt));
  CHECK(k.find(std::string("own attention (64x64 tiles, causal, mask_mod document, block mask "
                           "per step: ") +
               pct) != std::string::npos);
  CHECK(k.find(std::string("own attention backward (64x64 tiles, causal, mask_mod document, "
                           "block mask per step: ") +
               pct) != std::string::npos);
  CHECK(want < kB * kH * 15);  // fewer than the causal mask alone keeps
}

TEST_CASE("a score_mod reading outside its captured tensor is an error, not a bad read",
          "[op][attention][mods]") {
  // The relative table has 2 * kRel + 1 rows; a function that forgets to clip reads row
  // kv - q + kRel, outside it as soon as |kv - q| > kRel.
  static constexpr auto unclipped = [](auto s, auto, auto h, auto q, auto kv, auto table) {
    return s + table(kv - q + kRel, h);
  };
  static constexpr auto g = model([](Builder& b) {
    auto q = input<"q", Shape<kB, kH, sq, kDk>>(b);
    auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(b);
    auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(b);
    auto table = input<"table", Shape<2 * kRel + 1, kH>>(b);
    return sdpa(q, k, v, score_mod<"unclipped">(unclipped, table)).named("o").output("o");
  });
  const auto inputs = [](std::int64_t n) {
    NamedArrays in = mods_inputs<kRelative>(n, n, 1);
    in.erase("w");
    return in;
  };
  const NamedArrays in = inputs(9);
  Session s(g, {.threads = 2});
  s.set_inputs(in);
  const char* want = "stag: o: unclipped read its captured tensor 0 (shape [7, 4]) at [";
  CHECK_THROWS_WITH(s.run(), Catch::Contains(want) && Catch::Contains("outside its shape"));
  CHECK_THROWS_WITH(evaluate_reference(g, in, {}), Catch::Contains(want));
  // Within the table's reach it runs.
  const NamedArrays near = inputs(1);
  Session ok(g, {.threads = 2});
  ok.set_inputs(near);
  ok.run();
  th::require_close(ok.get("o"), evaluate_reference(g, near, {}, {.f64 = true})["o"], 2e-5);
}

TEST_CASE("score_mod ALiBi and soft-capping equal the kernel's built-in ones",
          "[op][attention][mods]") {
  // Two implementations: the built-in scores are vectorised loops of their own in the kernel
  // and the reference; the score_mods go through the compiled functions and dual numbers.
  for (const auto& [s_q, s_k] : kSquare) {
    INFO("S " << s_q);
    NamedArrays in = mods_inputs<kAlibi>(s_q, s_k, 8);
    std::vector<double> slopes;
    for (int h = 0; h < kH; ++h) slopes.push_back(std::exp2(-8.0 * (h + 1) / kH));
    in["slopes"] = Array::from_vector<double>({kH}, slopes).to(DType::f32);
    const NamedArrays plain{{"q", in["q"]}, {"k", in["k"]}, {"v", in["v"]}, {"w", in["w"]}};
    const std::vector<Array> mod = run_cpu(mods_train<kAlibi>, in, {"q", "k", "v"});
    const std::vector<Array> built = run_cpu(mods_train<kBuiltinAlibi>, plain, {"q", "k", "v"});
    const std::vector<Array> capmod = run_cpu(mods_train<kSoftcap>, plain, {"q", "k", "v"});
    const std::vector<Array> cap = run_cpu(mods_train<kBuiltinSoftcap>, plain, {"q", "k", "v"});
    for (std::size_t i = 0; i < 4; ++i) {
      INFO("value " << i << " (loss, dq, dk, dv)");
      th::require_close(mod[i], built[i], 2e-5 * std::max(1.0, std::abs(built[0].at(0))));
      th::require_close(capmod[i], cap[i], 2e-5 * std::max(1.0, std::abs(cap[0].at(0))));
    }
  }
}

TEST_CASE("a score_mod whose captured tensor needs no gradient gives the same dq, dk, dv",
          "[op][attention][mods]") {
  // The slopes are an input the loss is not differentiated by: the backward then runs its
  // d/d(score)-only pass. The same as with the slopes' gradient, and as the built-in ALiBi.
  static constexpr auto qkv_only = grad<mods_loss<kAlibi>, "q", "k", "v">();
  NamedArrays in = mods_inputs<kAlibi>(130, 130, 4);
  std::vector<double> slopes;
  for (int h = 0; h < kH; ++h) slopes.push_back(std::exp2(-8.0 * (h + 1) / kH));
  in["slopes"] = Array::from_vector<double>({kH}, slopes).to(DType::f32);
  const NamedArrays plain{{"q", in["q"]}, {"k", in["k"]}, {"v", in["v"]}, {"w", in["w"]}};
  const std::vector<Array> a = run_cpu(qkv_only, in, {"q", "k", "v"});
  const std::vector<Array> b = run_cpu(mods_train<kAlibi>, in, {"q", "k", "v"});
  const std::vector<Array> c = run_cpu(mods_train<kBuiltinAlibi>, plain, {"q", "k", "v"});
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("value " << i << " (loss, dq, dk, dv)");
    th::require_close(a[i], b[i], 0.0);
    th::require_close(a[i], c[i], 2e-5 * std::max(1.0, std::abs(c[0].at(0))));
  }
}

}  // namespace

// The fused attention op: reference vs f64, central-difference gradients, the tiled CPU kernel
// vs the reference, and fused vs the unfused chain (matmul, masked softmax, dropout, matmul)
// for every mask kind, with grouped-query heads, d_k != d_v, odd and tile-crossing lengths,
// query length != key length, fully masked rows and dropout; and attention over a cache with
// per-row positions (cache_positions) against the reference, the unfused chain and NaN in the
// key tiles it must skip.
#include <algorithm>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto sq = sym<"sq">;
constexpr auto sk = sym<"sk">;
constexpr int kB = 2, kH = 4, kKvh = 2, kDk = 5, kDv = 3, kWindow = 5;
constexpr double kDrop = 0.25;

// Mask kinds under test: the three built-in ones and a dense keep mask.
enum Kind { kNone, kCausal, kWindowed, kDense };

template <int K>
constexpr auto fused_out(Builder& g, SdpaOptions o = {}) {
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  if constexpr (K == kDense) {
    auto keep = input<"keep", Shape<kB, 1, sq, sk>, boolean>(g);
    return sdpa(q, k, v, keep, o);
  } else {
    o.mask = K == kCausal ? AttnMask::causal
                          : (K == kWindowed ? AttnMask::sliding_window : AttnMask::none);
    o.window = kWindow;
    return sdpa(q, k, v, o);
  }
}

template <int K, bool Drop>
constexpr auto fused_loss = model([](Builder& g) {
  auto o = fused_out<K>(g, {.dropout = Drop ? kDrop : 0.0, .salt = 1000});
  auto w = input<"w", Shape<kB, kH, sq, kDv>>(g);
  return sum<0, 1, 2, 3>(o * w);
});
template <int K, bool Drop>
constexpr auto fused_train = grad<fused_loss<K, Drop>, "q", "k", "v">();

static_assert(fused_loss<kCausal, false>.count(op::attention) == 1);
static_assert(fused_train<kCausal, false>.count(op::attention_backward) == 1);
static_assert(fused_train<kDense, true>.count(op::attention_backward_kv) == 2);

// The unfused chain the articles write, with the mask as a dense keep input and the same
// dropout salt as the fused op.
template <bool Drop>
constexpr auto unfused_loss = model([](Builder& g) {
  g.fuse_attention = false;  // the chain as written, not the fusion pass's op
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  auto keep = input<"keep", Shape<kB, 1, sq, sk>, boolean>(g);
  auto w = input<"w", Shape<kB, kH, sq, kDv>>(g);
  // Each key/value head repeated for its group of query heads, as grouped_query_attention does.
  auto kr = view<kB, kH, sk, kDk>(expand<kB, kKvh, kH / kKvh, sk, kDk>(unsqueeze<2>(k)));
  auto vr = view<kB, kH, sk, kDv>(expand<kB, kKvh, kH / kKvh, sk, kDv>(unsqueeze<2>(v)));
  auto scores = matmul_nt(q, kr) * (1.0 / cx::sqrt(static_cast<double>(kDk)));
  auto p = softmax<-1>(scores, keep);
  if constexpr (Drop) p = decltype(p){&g, dropout(p.ref(), kDrop, 1000).id};
  return sum<0, 1, 2, 3>(matmul(p, vr) * w);
});
template <bool Drop>
constexpr auto unfused_train = grad<unfused_loss<Drop>, "q", "k", "v">();

// The dense keep mask that the built-in mask `kind` stands for ([B, 1, Sq, Sk]); kDense gets a
// random mask with one fully masked query row.
Array keep_of(int kind, std::int64_t s_q, std::int64_t s_k, std::uint64_t seed) {
  Array m = th::random_array(DType::boolean, {kB, 1, s_q, s_k}, seed);
  for (std::int64_t b = 0; b < kB; ++b)
    for (std::int64_t i = 0; i < s_q; ++i)
      for (std::int64_t j = 0; j < s_k; ++j) {
        const std::int64_t at = (b * s_q + i) * s_k + j;
        const std::int64_t hi = i + s_k - s_q;
        if (kind == kNone) m.set(at, 1);
        if (kind == kCausal) m.set(at, j <= hi);
        if (kind == kWindowed) m.set(at, j <= hi && j > hi - kWindow);
        if (kind == kDense && b == 1 && i == s_q / 2) m.set(at, 0);
      }
  return m;
}

NamedArrays inputs_of(int kind, std::int64_t s_q, std::int64_t s_k, std::uint64_t seed) {
  NamedArrays in{{"q", th::random_array(DType::f32, {kB, kH, s_q, kDk}, seed, -2, 2)},
                 {"k", th::random_array(DType::f32, {kB, kKvh, s_k, kDk}, seed + 1, -2, 2)},
                 {"v", th::random_array(DType::f32, {kB, kKvh, s_k, kDv}, seed + 2)},
                 {"w", th::random_array(DType::f32, {kB, kH, s_q, kDv}, seed + 3)}};
  if (kind == kDense) in["keep"] = keep_of(kind, s_q, s_k, seed + 4);
  return in;
}

// (Sq, Sk): a single position, odd sizes, Sq != Sk both ways, and lengths that cross tiles.
constexpr std::pair<std::int64_t, std::int64_t> kLens[] = {
    {1, 1}, {7, 7}, {13, 29}, {130, 130}, {70, 13}};

template <int K, bool Drop>
void check_fused_op(const char* what) {
  th::check_op(
      {.what = what,
       .forward = fused_loss<K, Drop>,
       .train = fused_train<K, Drop>,
       .inputs = [](int b) { return inputs_of(K, kLens[b].first, kLens[b].second, 10 + 10 * b); },
       .bindings = 5,
       .eval = {.training = Drop, .seed = 3, .step = 4}});
}

TEST_CASE("fused attention without a mask", "[op][attention][gradcheck]") {
  check_fused_op<kNone, false>("sdpa, no mask");
}
TEST_CASE("fused attention, causal", "[op][attention][gradcheck]") {
  check_fused_op<kCausal, false>("sdpa, causal");
}
TEST_CASE("fused attention, sliding window", "[op][attention][gradcheck]") {
  check_fused_op<kWindowed, false>("sdpa, sliding window");
}
TEST_CASE("fused attention, dense keep mask with a fully masked row",
          "[op][attention][gradcheck]") {
  check_fused_op<kDense, false>("sdpa, keep mask");
}
TEST_CASE("fused attention with dropout", "[op][attention][gradcheck]") {
  check_fused_op<kCausal, true>("sdpa, causal, dropout");
  check_fused_op<kDense, true>("sdpa, keep mask, dropout");
}

// Runs a training graph on the CPU session and returns the loss and the three gradients.
std::vector<Array> run_cpu(const GraphView& g, const NamedArrays& in, bool training,
                           std::uint64_t step) {
  Session s(g, {.threads = 2, .seed = 3});
  s.set_inputs(in);
  s.run({.training = training, .step = step});
  return {Array::from<float>({}, {static_cast<float>(s.result())}), s.get("grad/q"),
          s.get("grad/k"), s.get("grad/v")};
}

template <int K, bool Drop>
void check_fused_vs_unfused() {
  for (const auto& [s_q, s_k] : kLens) {
    INFO("kind " << K << ", dropout " << Drop << ", Sq " << s_q << ", Sk " << s_k);
    NamedArrays in = inputs_of(K, s_q, s_k, 7);
    const std::vector<Array> fused = run_cpu(fused_train<K, Drop>, in, Drop, 5);
    in["keep"] = K == kDense ? in["keep"] : keep_of(K, s_q, s_k, 0);
    const std::vector<Array> unfused = run_cpu(unfused_train<Drop>, in, Drop, 5);
    for (std::size_t i = 0; i < fused.size(); ++i) {
      INFO("value " << i << " (loss, dq, dk, dv)");
      th::require_close(fused[i], unfused[i], 2e-5 * std::max(1.0, std::abs(unfused[0].at(0))));
    }
  }
}

TEST_CASE("fused attention equals the unfused chain on the CPU", "[op][attention]") {
  check_fused_vs_unfused<kNone, false>();
  check_fused_vs_unfused<kCausal, false>();
  check_fused_vs_unfused<kWindowed, false>();
  check_fused_vs_unfused<kDense, false>();
}

TEST_CASE("fused attention's dropout draws the unfused path's masks", "[op][attention]") {
  check_fused_vs_unfused<kCausal, true>();
  check_fused_vs_unfused<kDense, true>();
}

TEST_CASE("fused attention's dropout is deterministic per (seed, step)", "[op][attention]") {
  const NamedArrays in = inputs_of(kCausal, 130, 130, 3);
  const auto a = run_cpu(fused_train<kCausal, true>, in, true, 1);
  const auto b = run_cpu(fused_train<kCausal, true>, in, true, 1);
  const auto c = run_cpu(fused_train<kCausal, true>, in, true, 2);
  for (std::size_t i = 0; i < a.size(); ++i) th::require_close(a[i], b[i], 0);
  CHECK(a[0].at(0) != c[0].at(0));
}

TEST_CASE("fused attention runs the tiled kernel and reports the tiles it skips",
          "[op][attention]") {
  Session s(fused_train<kCausal, false>, {.threads = 1});
  s.set_inputs(inputs_of(kCausal, 130, 130, 3));
  s.run();
  const std::string k = s.describe_kernels();
  INFO(k);
  CHECK(k.find("own attention (64x64 tiles, causal") != std::string::npos);
  CHECK(k.find("own attention backward (64x64 tiles, causal") != std::string::npos);
  // 130 keys and queries make 3 x 3 tiles; causal keeps the 6 on and below the diagonal.
  CHECK(k.find("67% of tiles computed") != std::string::npos);
}

// ---- attention over a key/value cache with per-row positions ----------------------------------

// sdpa(q, k, v, cache_positions(pos)) with a causal mask or a sliding window.
template <bool Window>
constexpr auto cached_out = model([](Builder& g) {
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  auto pos = input<"pos", Shape<kB>, i32>(g);
  const SdpaOptions o{.mask = Window ? AttnMask::sliding_window : AttnMask::causal,
                      .window = kWindow};
  return sdpa(q, k, v, cache_positions(pos), o).named("o").output("o");
});
static_assert(cached_out<false>.count(op::attention) == 1);

// The unfused chain over a dense keep mask: what the positions stand for.
constexpr auto unfused_out = model([](Builder& g) {
  g.fuse_attention = false;  // the chain as written, not the fusion pass's op
  auto q = input<"q", Shape<kB, kH, sq, kDk>>(g);
  auto k = input<"k", Shape<kB, kKvh, sk, kDk>>(g);
  auto v = input<"v", Shape<kB, kKvh, sk, kDv>>(g);
  auto keep = input<"keep", Shape<kB, 1, sq, sk>, boolean>(g);
  auto kr = view<kB, kH, sk, kDk>(expand<kB, kKvh, kH / kKvh, sk, kDk>(unsqueeze<2>(k)));
  auto vr = view<kB, kH, sk, kDv>(expand<kB, kKvh, kH / kKvh, sk, kDv>(unsqueeze<2>(v)));
  auto scores = matmul_nt(q, kr) * (1.0 / cx::sqrt(static_cast<double>(kDk)));
  return matmul(softmax<-1>(scores, keep), vr).named("o").output("o");
});

// keep[b, 0, i, j]: query i of row b at position pos[b] + i sees key j (and row pos -1 nothing).
Array keep_at(const std::vector<std::int32_t>& pos, std::int64_t s_q, std::int64_t s_k,
              bool window) {
  Array m(DType::boolean, {kB, 1, s_q, s_k});
  for (std::int64_t b = 0; b < kB; ++b)
    for (std::int64_t i = 0; i < s_q; ++i)
      for (std::int64_t j = 0; j < s_k; ++j) {
        const std::int64_t p = pos[static_cast<std::size_t>(b)], hi = p + i;
        m.set((b * s_q + i) * s_k + j, p >= 0 && j <= hi && (!window || j > hi - kWindow));
      }
  return m;
}

NamedArrays cached_inputs(const std::vector<std::int32_t>& pos, std::int64_t s_q, std::int64_t s_k,
                          std::uint64_t seed) {
  return {{"q", th::random_array(DType::f32, {kB, kH, s_q, kDk}, seed, -2, 2)},
          {"k", th::random_array(DType::f32, {kB, kKvh, s_k, kDk}, seed + 1, -2, 2)},
          {"v", th::random_array(DType::f32, {kB, kKvh, s_k, kDv}, seed + 2)},
          {"pos", Array::from_vector<std::int32_t>({kB}, pos)}};
}

struct CachedCase {
  std::int64_t s_q, s_k;
  std::vector<std::int32_t> pos;
};
// One query at the end of the cache, a row at 0, an inactive row, queries crossing tiles, and
// rows far apart in one batch.
const CachedCase kCachedCases[] = {{1, 1, {0, 0}},       {1, 13, {12, 5}},   {3, 13, {0, 10}},
                                   {7, 29, {-1, 22}},    {70, 130, {60, 0}}, {13, 200, {187, 3}},
                                   {130, 260, {-1, 129}}};

TEST_CASE("sdpa over a cache with per-row positions: CPU vs reference vs the unfused chain",
          "[op][attention]") {
  for (bool window : {false, true})
    for (const CachedCase& c : kCachedCases) {
      INFO("window " << window << ", Sq " << c.s_q << ", Sk " << c.s_k << ", pos " << c.pos[0]
                     << ", " << c.pos[1]);
      NamedArrays in = cached_inputs(c.pos, c.s_q, c.s_k, 31 + static_cast<std::uint64_t>(c.s_k));
      const GraphView g = window ? GraphView(cached_out<true>) : GraphView(cached_out<false>);
      const Array want = evaluate_reference(g, in, {}, {.f64 = true})["o"];
      Session s(g, {.threads = 2});
      s.set_inputs(in);
      s.run();
      // f32 kernels (the tiled one uses a polynomial exp) against the f64 oracle.
      th::require_close(s.get("o"), want, 2e-5);
      th::require_close(evaluate_reference(g, in, {})["o"], want, 2e-6);
      in["keep"] = keep_at(c.pos, c.s_q, c.s_k, window);
      in.erase("pos");
      th::require_close(evaluate_reference(unfused_out, in, {}, {.f64 = true})["o"], want, 1e-12);
      // An inactive row gives zeros.
      for (std::int64_t b = 0; b < kB; ++b)
        if (c.pos[static_cast<std::size_t>(b)] < 0)
          for (std::int64_t x = 0; x < kH * c.s_q * kDv; ++x)
            REQUIRE(s.get("o").at(b * kH * c.s_q * kDv + x) == 0.0);
    }
}

TEST_CASE("sdpa over a cache never reads the key tiles past a row's last position",
          "[op][attention]") {
  // 3 queries at positions 5..7 (row 0) and 60..62 (row 1) of a 300-key cache: key tiles from
  // 64 on are past both rows; NaN there must not reach the output.
  const std::vector<std::int32_t> pos{5, 60};
  NamedArrays in = cached_inputs(pos, 3, 300, 77);
  const Array clean = [&] {
    Session s(cached_out<false>, {.threads = 2});
    s.set_inputs(in);
    s.run();
    return s.get("o");
  }();
  for (const char* name : {"k", "v"})
    for (std::int64_t i = 0; i < in[name].numel(); ++i)
      if ((i / (name[0] == 'k' ? kDk : kDv)) % 300 >= 64) in[name].set(i, NAN);
  Session s(cached_out<false>, {.threads = 2});
  s.set_inputs(in);
  s.run();
  th::require_close(s.get("o"), clean, 0.0);
  th::require_close(evaluate_reference(cached_out<false>, in, {})["o"], clean, 2e-6);
  CHECK(s.describe_kernels().find("causal at per-row cache positions") != std::string::npos);
}

TEST_CASE("sdpa over a cache refuses a position outside [-1, Sk - Sq]", "[op][attention]") {
  for (std::int32_t bad : {11, -2}) {
    INFO("pos " << bad);
    const NamedArrays in = cached_inputs({0, bad}, 3, 13, 5);
    Session s(cached_out<false>, {.threads = 1});
    s.set_inputs(in);
    const std::string want =
        "stag: o: sdpa over a cache of 13 positions with 3 new queries per "
        "row: cache position " +
        std::to_string(bad) + " of batch row 1 is outside [-1, 10] (-1: an inactive row)";
    CHECK_THROWS_WITH(s.run(), Catch::Contains(want));
    CHECK_THROWS_WITH(evaluate_reference(cached_out<false>, in, {}), Catch::Contains(want));
  }
}

}  // namespace

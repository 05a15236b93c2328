// The fused attention's bf16 tile products (tiled_bf16.hpp). The loops are tiled.hpp's, with
// tile_math.hpp's softmax, masks and dropout; the products go through dot() below, whose
// operand layouts suit vdpbf16ps: it adds to each of 16 f32 lanes the products of a pair of
// bf16 values, so an operand B is stored as 32-bit words, each the pair of B's elements
// (2x, n) and (2x + 1, n) along the summed axis, and an operand A is broadcast one 32-bit
// word (A's elements (m, 2x) and (m, 2x + 1)) at a time:
//   A "rows":   bf16 rows, the pair is two neighbours in a row (q, dO, P, dS as stored);
//   B "t":      word x of row n at [x][n]: a row-major matrix's pairs, transposed (k and v for
//               q k^T and dO v^T);
//   B "pairs":  rows 2x and 2x + 1 interleaved element by element (v for P v, k for dS k, and
//               P and dS for the transposed products);
//   A "pairs_t": the pairs layout transposed, [n][x] (q and dO for dK^T and dV^T).
// dK and dV are accumulated transposed (dK^T = q^T dS, dV^T = dO^T P), so that no tile of P or
// dS is transposed; they are transposed once per (batch, key/value head) at the end.
//
// Only dot(), rows_to_bf16() and pairs_to_bf16() use AVX512-BF16, through target attributes:
// the file is built with the other CPU kernels' flags, and these functions are reached only
// where cpu_has_bf16_dot() holds.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include <stag/ops/attention/tile_math.hpp>
#include <stag/ops/attention/tiled_bf16.hpp>
#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/kernel.hpp>

#if !defined(__x86_64__)
#error "ops/attention/cpu_bf16.cpp is x86-64 code"
#endif

#define STAG_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))

namespace stag::attn {
namespace {

using u16 = std::uint16_t;
using u32 = std::uint32_t;
using i64 = std::int64_t;
using detail::round_up;

// C[4][16 NV] (row stride ldc) = scale * A B, or += A B (Acc), over kp pairs: A's rows are
// 32-bit words (row stride lda words), B is kp rows of 16 NV words (row stride ldb).
template <int NV, bool Acc>
STAG_BF16_TARGET void dot_block(const u32* __restrict a, i64 lda, const u32* __restrict b, i64 ldb,
                                i64 kp, float* __restrict c, i64 ldc, float scale) {
  __m512 acc[4][NV];
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < NV; ++j)
      acc[r][j] = Acc ? _mm512_loadu_ps(c + r * ldc + j * 16) : _mm512_setzero_ps();
  for (i64 x = 0; x < kp; ++x) {
    __m512i bv[NV];
    for (int j = 0; j < NV; ++j) bv[j] = _mm512_loadu_si512(b + x * ldb + j * 16);
    for (int r = 0; r < 4; ++r) {
      const __m512i av = _mm512_set1_epi32(static_cast<int>(a[r * lda + x]));
      for (int j = 0; j < NV; ++j)
        acc[r][j] = _mm512_dpbf16_ps(acc[r][j], (__m512bh)av, (__m512bh)bv[j]);
    }
  }
  const __m512 sv = _mm512_set1_ps(scale);
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < NV; ++j)
      _mm512_storeu_ps(c + r * ldc + j * 16, Acc ? acc[r][j] : _mm512_mul_ps(acc[r][j], sv));
}

// C[m][16 nvec] = scale * A B or += A B, m a multiple of 4 (see dot_block).
template <bool Acc>
STAG_BF16_TARGET __attribute__((noinline)) void dot(const u32* a, i64 lda, const u32* b, i64 ldb,
                                                    i64 kp, float* c, i64 ldc, i64 m, int nvec,
                                                    float scale = 1.f) {
  for (i64 i = 0; i < m; i += 4) {
    const u32* ai = a + i * lda;
    float* ci = c + i * ldc;
    int v = 0;
    for (; v + 4 <= nvec; v += 4)
      dot_block<4, Acc>(ai, lda, b + v * 16, ldb, kp, ci + v * 16, ldc, scale);
    switch (nvec - v) {
      case 1:
        dot_block<1, Acc>(ai, lda, b + v * 16, ldb, kp, ci + v * 16, ldc, scale);
        break;
      case 2:
        dot_block<2, Acc>(ai, lda, b + v * 16, ldb, kp, ci + v * 16, ldc, scale);
        break;
      case 3:
        dot_block<3, Acc>(ai, lda, b + v * 16, ldb, kp, ci + v * 16, ldc, scale);
        break;
      default:
        break;
    }
  }
}

// The first `rows` rows of an f32 [64][64] tile as bf16 rows [64][64] (an A operand).
STAG_BF16_TARGET __attribute__((noinline)) void rows_to_bf16(const float* __restrict s,
                                                             u16* __restrict d, i64 rows) {
  for (i64 r = 0; r < rows; ++r)
    for (int j = 0; j < kTile; j += 32) {
      const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + r * kTile + j + 16),
                                             _mm512_loadu_ps(s + r * kTile + j));
      _mm512_storeu_si512(d + r * kTile + j, (__m512i)x);
    }
}

// Rows 2x and 2x + 1 of an f32 [64][64] tile interleaved as bf16 pairs [32][64] words (a B
// operand summed over the tile's rows), for the first ceil(rows / 2) pairs.
STAG_BF16_TARGET __attribute__((noinline)) void pairs_to_bf16(const float* __restrict s,
                                                              u32* __restrict d, i64 rows) {
  // cvtne2ps gives row 2x's 16 values in the low half and row 2x + 1's in the high half;
  // the permutation interleaves them: element 2i <- i, 2i + 1 <- 16 + i.
  alignas(64) static constexpr std::int16_t kIdx[32] = {0,  16, 1,  17, 2,  18, 3,  19, 4,  20, 5,
                                                        21, 6,  22, 7,  23, 8,  24, 9,  25, 10, 26,
                                                        11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i idx = _mm512_load_si512(kIdx);
  for (i64 x = 0; x < (rows + 1) / 2; ++x)
    for (int j = 0; j < kTile; j += 16) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + (2 * x + 1) * kTile + j),
                                             _mm512_loadu_ps(s + 2 * x * kTile + j));
      _mm512_storeu_si512(d + x * kTile + j, _mm512_permutexvar_epi16(idx, (__m512i)v));
    }
}

// Word x of a bf16 row of n elements: elements 2x and 2x + 1 (0 past the end).
inline u32 word(const u16* row, i64 x, i64 n) {
  const u32 lo = 2 * x < n ? row[2 * x] : 0u, hi = 2 * x + 1 < n ? row[2 * x + 1] : 0u;
  return lo | hi << 16;
}

// Rows [r0, r0 + rows) of a strided bf16 [S, n] matrix as zero-padded bf16 rows [64][np].
void pack_rows(const u16* src, i64 stride, i64 r0, i64 rows, i64 n, i64 np, u16* dst) {
  std::memset(dst, 0, sizeof(u16) * static_cast<std::size_t>(kTile * np));
  for (i64 r = 0; r < rows; ++r)
    std::memcpy(dst + r * np, src + (r0 + r) * stride, sizeof(u16) * static_cast<std::size_t>(n));
}
// The same rows in the "t" layout: [np / 2][64] words, word x of row r at [x][r].
void pack_t(const u16* src, i64 stride, i64 r0, i64 rows, i64 n, i64 np, u32* dst) {
  std::memset(dst, 0, sizeof(u32) * static_cast<std::size_t>(np / 2 * kTile));
  for (i64 r = 0; r < rows; ++r) {
    const u16* s = src + (r0 + r) * stride;
    for (i64 x = 0; x < (n + 1) / 2; ++x) dst[x * kTile + r] = word(s, x, n);
  }
}
// The same rows in the "pairs" layout: [32][np] words, rows 2x and 2x + 1 interleaved.
void pack_pairs(const u16* src, i64 stride, i64 r0, i64 rows, i64 n, i64 np, u32* dst) {
  std::memset(dst, 0, sizeof(u32) * static_cast<std::size_t>(kTile / 2 * np));
  for (i64 r = 0; r < rows; ++r) {
    const u16* s = src + (r0 + r) * stride;
    const int half = static_cast<int>(r % 2) * 16;
    for (i64 e = 0; e < n; ++e) dst[r / 2 * np + e] |= static_cast<u32>(s[e]) << half;
  }
}
// Zero-padded bf16 rows [64][np] in the "pairs_t" layout: [np][32] words.
void pack_pairs_t(const u16* rows64, i64 np, u32* dst) {
  for (i64 e = 0; e < np; ++e)
    for (i64 x = 0; x < kTile / 2; ++x)
      dst[e * (kTile / 2) + x] = static_cast<u32>(rows64[2 * x * np + e]) |
                                 static_cast<u32>(rows64[(2 * x + 1) * np + e]) << 16;
}

const u32* words(const u16* p) {
  return reinterpret_cast<const u32*>(p);
}
// Vectors of 16 covering `cols` columns.
int nvec_of(i64 cols) {
  return static_cast<int>(round_up(cols, 16) / 16);
}
// Zeros columns [16 nvec, 64) of the first `rows` rows of a [64][64] tile.
void clear_tail(float* s, i64 rows, int nvec) {
  for (i64 r = 0; r < rows; ++r) std::fill(s + r * kTile + nvec * 16, s + (r + 1) * kTile, 0.f);
}

template <class T>
T* grown(std::vector<T>& v, i64 n) {
  if (v.size() < static_cast<std::size_t>(n)) v.resize(static_cast<std::size_t>(n));
  return v.data();
}

// On unless STAG_ATTENTION_BF16_PRODUCTS=0 (a user's way back to the widened f32 kernel, and
// the benchmarks' way to compare both in whole models).
std::atomic<bool> g_products{[] {
  const char* e = std::getenv("STAG_ATTENTION_BF16_PRODUCTS");
  return e == nullptr || std::string_view(e) != "0";
}()};

}  // namespace

bool cpu_has_bf16_dot() {
  static const bool has = [] {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl"))
      return false;
    // CPUID leaf 7, sub-leaf 1: EAX bit 5 is AVX512_BF16 (the builtin above does not know it
    // on every supported compiler). The AVX-512 checks above include the OS's state support.
    unsigned a = 0, b = 0, c = 0, d = 0;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(1));
    return ((a >> 5) & 1u) != 0;
  }();
  return has;
}

bool bf16_products() {
  return g_products.load() && cpu_has_bf16_dot();
}
bool set_bf16_products(bool on) {
  return g_products.exchange(on);
}

void forward_bf16(const Problem& p, float* o, float* lse) {
  using namespace detail;
  const i64 dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const i64 nq = query_tiles(p), nk = key_tiles(p);
  const i64 group = p.Hq / p.Hkv;
  const i64 items = p.B * p.Hq * nq;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  // k ("t" layout, for q k^T) and v ("pairs", for P v) of every key tile, packed once: every
  // query tile of the heads that share them reads them.
  const i64 kt_words = dkp / 2 * kTile, vn_words = kTile / 2 * dvp;
  // They go to the calling thread's staging buffer (no other kernel runs on this thread until
  // this one returns): a vector per call was zeroed and paged in anew each time.
  const i64 tiles = p.B * p.Hkv * nk;
  u32* const packed = reinterpret_cast<u32*>(
      thread_staging(static_cast<std::size_t>(tiles * (kt_words + vn_words))));
#pragma omp parallel for schedule(static)
  for (i64 t = 0; t < tiles; ++t) {
    const i64 kt = t % nk, bh = t / nk, kvh = bh % p.Hkv, b = bh / p.Hkv;
    const i64 k0 = kt * kTile, cols = std::min<i64>(kTile, p.Sk - k0);
    u32* dst = packed + t * (kt_words + vn_words);
    pack_t(p.kh + b * p.k_st[0] + kvh * p.k_st[1], p.k_st[2], k0, cols, p.Dk, dkp, dst);
    pack_pairs(p.vh + b * p.v_st[0] + kvh * p.v_st[1], p.v_st[2], k0, cols, p.Dv, dvp,
               dst + kt_words);
  }
#pragma omp parallel
  {
    struct Scratch {
      std::vector<u16> qa, pb;
      std::vector<float> s, acc;
    };
    thread_local Scratch w;
    u16* qa = grown(w.qa, kTile * dkp);
    u16* pb = grown(w.pb, kTile * kTile);
    float* s = grown(w.s, kTile * kTile);
    float* acc = grown(w.acc, kTile * dvp);
    float m[kTile], l[kTile];
#pragma omp for schedule(dynamic)
    for (i64 it = 0; it < items; ++it) {
      const i64 qt = it % nq, bh = it / nq, h = bh % p.Hq, b = bh / p.Hq;
      const i64 kvh = h / group;
      const i64 q0 = qt * kTile, rows = std::min<i64>(kTile, p.Sq - q0);
      const i64 rows4 = round_up(rows, 4);
      pack_rows(p.qh + b * p.q_st[0] + h * p.q_st[1], p.q_st[2], q0, rows, p.Dk, dkp, qa);
      std::fill_n(acc, kTile * dvp, 0.f);
      for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
      const i64 nk_row =
          row_inactive(p, b) ? 0
          : p.mask == MaskKind::none
              ? nk
              : std::clamp<i64>((q0 + rows - 1 + key_offset(p, b)) / kTile + 1, 0, nk);
      for (i64 kt = 0; kt < nk_row; ++kt) {
        const i64 k0 = kt * kTile, cols = std::min<i64>(kTile, p.Sk - k0);
        const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
        if (cls == 0) continue;
        const u32* kp = packed + ((b * p.Hkv + kvh) * nk + kt) * (kt_words + vn_words);
        const int nv = nvec_of(cols);
        dot<false>(words(qa), dkp / 2, kp, kTile, dkp / 2, s, kTile, rows4, nv, p.scale);
        clear_tail(s, rows4, nv);
        mask_scores(p, cls, b, h, q0, rows, k0, cols, s);
        online_softmax_tile(p, b, h, q0, k0, rows, s, m, l, acc, dvp);
        rows_to_bf16(s, pb, rows4);
        // Keys past `cols` have P = 0 and zero rows of v.
        dot<true>(words(pb), kTile / 2, kp + kt_words, dvp, (cols + 1) / 2, acc, dvp, rows4,
                  static_cast<int>(dvp / 16));
      }
      float* ob = o + ((b * p.Hq + h) * p.Sq + q0) * p.Dv;
      for (i64 r = 0; r < rows; ++r) {
        const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        const float* a = acc + r * dvp;
        for (i64 x = 0; x < p.Dv; ++x) ob[r * p.Dv + x] = a[x] * inv;
        if (lse) lse[(b * p.Hq + h) * p.Sq + q0 + r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
      }
    }
  }
}

void backward_bf16(const Problem& p, const float* o, const std::int64_t* o_st, const float* dout,
                   const std::int64_t* do_st, const float* lse_saved, float* dq, float* dk,
                   float* dv) {
  using namespace detail;
  const i64 dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const i64 nq = query_tiles(p), nk = key_tiles(p);
  const i64 skp = nk * kTile;
  const i64 group = p.Hq / p.Hkv;
  const i64 items = p.B * p.Hkv;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  // Per key tile: k in the "t" layout (q k^T) and the "pairs" layout (dS k), v in "t" (dO v^T).
  const i64 kt_words = dkp / 2 * kTile, kn_words = kTile / 2 * dkp, vt_words = dvp / 2 * kTile;
  const i64 tile_words = kt_words + kn_words + vt_words;
#pragma omp parallel
  {
    std::vector<u32> packed(static_cast<std::size_t>(nk * tile_words));
    // dK^T [dkp][skp] and dV^T [dvp][skp] of the work item.
    std::vector<float> dkt(static_cast<std::size_t>(dkp * skp)),
        dvt(static_cast<std::size_t>(dvp * skp));
    std::vector<u16> qa(static_cast<std::size_t>(kTile * dkp)),
        doa(static_cast<std::size_t>(kTile * dvp)), dsb(kTile * kTile);
    std::vector<u32> qil(static_cast<std::size_t>(dkp * kTile / 2)),
        doil(static_cast<std::size_t>(dvp * kTile / 2)), pp(kTile / 2 * kTile),
        dsp(kTile / 2 * kTile);
    std::vector<float> dof(static_cast<std::size_t>(kTile * dvp)), s(kTile * kTile),
        dp(kTile * kTile), dmod(kTile * kTile), dqa(static_cast<std::size_t>(kTile * dkp));
    float lse[kTile], di[kTile];
#pragma omp for schedule(dynamic)
    for (i64 it = 0; it < items; ++it) {
      const i64 kvh = it % p.Hkv, b = it / p.Hkv;
      const u16* kb = p.kh + b * p.k_st[0] + kvh * p.k_st[1];
      const u16* vb = p.vh + b * p.v_st[0] + kvh * p.v_st[1];
      for (i64 kt = 0; kt < nk; ++kt) {
        const i64 k0 = kt * kTile, cols = std::min<i64>(kTile, p.Sk - k0);
        u32* t = packed.data() + kt * tile_words;
        pack_t(kb, p.k_st[2], k0, cols, p.Dk, dkp, t);
        pack_pairs(kb, p.k_st[2], k0, cols, p.Dk, dkp, t + kt_words);
        pack_t(vb, p.v_st[2], k0, cols, p.Dv, dvp, t + kt_words + kn_words);
      }
      std::fill(dkt.begin(), dkt.end(), 0.f);
      std::fill(dvt.begin(), dvt.end(), 0.f);
      for (i64 h = kvh * group; h < (kvh + 1) * group; ++h) {
        const u16* qb = p.qh + b * p.q_st[0] + h * p.q_st[1];
        const float* obh = o + b * o_st[0] + h * o_st[1];
        const float* dob = dout + b * do_st[0] + h * do_st[1];
        for (i64 qt = 0; qt < nq; ++qt) {
          const i64 q0 = qt * kTile, rows = std::min<i64>(kTile, p.Sq - q0);
          const i64 rows4 = round_up(rows, 4);
          pack_rows(qb, p.q_st[2], q0, rows, p.Dk, dkp, qa.data());
          pack_pairs_t(qa.data(), dkp, qil.data());
          detail::pack_rows(dob, do_st[2], q0, rows, p.Dv, dvp, dof.data());
          for (i64 e = 0; e < kTile * dvp; ++e)
            doa[static_cast<std::size_t>(e)] =
                kernel::float_to_bf16(dof[static_cast<std::size_t>(e)]);
          pack_pairs_t(doa.data(), dvp, doil.data());
          for (i64 r = 0; r < kTile; ++r) {
            float d = 0.f;  // the row's o . dO, in f32 from the f32 dO
            if (r < rows) {
              const float* orow = obh + (q0 + r) * o_st[2];
              const float* grow = dof.data() + r * dvp;
              for (i64 x = 0; x < p.Dv; ++x) d += orow[x] * grow[x];
            }
            di[r] = d;
            lse[r] = ninf;
          }
          if (lse_saved) {
            for (i64 r = 0; r < rows; ++r) lse[r] = lse_saved[(b * p.Hq + h) * p.Sq + q0 + r];
          } else {  // the row statistics again, from q k^T
            float m[kTile], l[kTile];
            for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
            for (i64 kt = 0; kt < nk; ++kt) {
              const i64 k0 = kt * kTile, cols = std::min<i64>(kTile, p.Sk - k0);
              const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
              if (cls == 0) continue;
              const int nv = nvec_of(cols);
              dot<false>(words(qa.data()), dkp / 2, packed.data() + kt * tile_words, kTile, dkp / 2,
                         s.data(), kTile, rows4, nv, p.scale);
              clear_tail(s.data(), rows4, nv);
              mask_scores(p, cls, b, h, q0, rows, k0, cols, s.data());
              row_statistics_tile(rows, s.data(), m, l);
            }
            for (i64 r = 0; r < rows; ++r) lse[r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
          }
          std::fill(dqa.begin(), dqa.end(), 0.f);
          for (i64 kt = 0; kt < nk; ++kt) {
            const i64 k0 = kt * kTile, cols = std::min<i64>(kTile, p.Sk - k0);
            const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
            if (cls == 0) continue;
            const u32* t = packed.data() + kt * tile_words;
            const int nv = nvec_of(cols);
            float* sp = s.data();    // scores, then P (with dropout applied)
            float* dpp = dp.data();  // dP, then dS
            dot<false>(words(qa.data()), dkp / 2, t, kTile, dkp / 2, sp, kTile, rows4, nv, p.scale);
            clear_tail(sp, rows4, nv);
            const bool capped = p.score_mod == ScoreMod::softcap;
            mask_scores(p, cls, b, h, q0, rows, k0, cols, sp, capped ? dmod.data() : nullptr);
            dot<false>(words(doa.data()), dvp / 2, t + kt_words + kn_words, kTile, dvp / 2, dpp,
                       kTile, rows4, nv);
            clear_tail(dpp, rows4, nv);
            softmax_backward_tile(p, b, h, q0, k0, rows, lse, di, capped ? dmod.data() : nullptr,
                                  sp, dpp);
            // dV^T += dO^T P, dK^T += q^T dS (both scaled at the end), dq += dS k. Rows past
            // `rows` of P and dS are 0, and so are their pairs.
            pairs_to_bf16(sp, pp.data(), rows);
            pairs_to_bf16(dpp, dsp.data(), rows);
            rows_to_bf16(dpp, dsb.data(), rows4);
            dot<true>(doil.data(), kTile / 2, pp.data(), kTile, (rows + 1) / 2, dvt.data() + k0,
                      skp, dvp, nv);
            dot<true>(qil.data(), kTile / 2, dsp.data(), kTile, (rows + 1) / 2, dkt.data() + k0,
                      skp, dkp, nv);
            dot<true>(words(dsb.data()), kTile / 2, t + kt_words, dkp, (cols + 1) / 2, dqa.data(),
                      dkp, rows4, static_cast<int>(dkp / 16));
          }
          float* dqb = dq + ((b * p.Hq + h) * p.Sq + q0) * p.Dk;
          for (i64 r = 0; r < rows; ++r)
            for (i64 x = 0; x < p.Dk; ++x)
              dqb[r * p.Dk + x] = dqa[static_cast<std::size_t>(r * dkp + x)] * p.scale;
        }
      }
      float* dkb = dk + (b * p.Hkv + kvh) * p.Sk * p.Dk;
      float* dvb = dv + (b * p.Hkv + kvh) * p.Sk * p.Dv;
      for (i64 r = 0; r < p.Sk; ++r) {
        for (i64 x = 0; x < p.Dk; ++x)
          dkb[r * p.Dk + x] = dkt[static_cast<std::size_t>(x * skp + r)] * p.scale;
        for (i64 x = 0; x < p.Dv; ++x)
          dvb[r * p.Dv + x] = dvt[static_cast<std::size_t>(x * skp + r)];
      }
    }
  }
}

}  // namespace stag::attn

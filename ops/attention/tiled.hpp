// The tiled CPU attention kernel (flash-attention-2 style): queries and keys in 64-row tiles,
// an online softmax in the forward pass, and a backward pass that recomputes the probabilities
// from the saved log-sum-exp. Plain C++ over GCC/clang vector types, so it has no dependency
// on the rest of stag and is tested standalone too. A new built-in mask adds a case to
// builtin_tile_class() and mask_scores().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include <stag/ops/attention/mods.hpp>
#include <stag/ops/attention/problem.hpp>
#include <stag/ops/random.hpp>
#include <stag/ops/vec.hpp>

namespace stag::attn {

// The key position of row b's first query: pos[b] with cache positions, else Sk - Sq.
inline std::int64_t key_offset(const Problem& p, std::int64_t b) {
  return p.pos ? static_cast<std::int64_t>(p.pos[b]) : p.Sk - p.Sq;
}
inline bool row_inactive(const Problem& p, std::int64_t b) {
  return p.pos && p.pos[b] < 0;
}

// Which tiles of row b a built-in mask keeps: 0 = none of the tile, 1 = part of it, 2 = all.
inline int builtin_tile_class(const Problem& p, std::int64_t b, std::int64_t q0, std::int64_t q1,
                              std::int64_t k0, std::int64_t k1) {
  if (row_inactive(p, b)) return 0;
  const std::int64_t off = key_offset(p, b);
  int c = 2;
  if (p.mask != MaskKind::none) {
    // Row q keeps keys [lo(q), hi(q)] with hi(q) = q + off and, for a window, lo = hi - w + 1.
    const std::int64_t hi_first = q0 + off, hi_last = q1 - 1 + off;
    if (k0 > hi_last) return 0;
    if (k1 - 1 > hi_first) c = 1;
    if (p.mask == MaskKind::sliding_window) {
      const std::int64_t lo_first = hi_first - p.window + 1, lo_last = hi_last - p.window + 1;
      if (k1 - 1 < lo_first) return 0;
      if (k0 < lo_last) c = 1;
    }
  }
  if (p.keep != nullptr) c = std::min(c, 1);
  return c;
}
inline std::int64_t query_tiles(const Problem& p) {
  return (p.Sq + kTile - 1) / kTile;
}
// The class of a tile of (b, h): the built-in mask's, or the block mask's with a mask_mod.
inline int tile_class(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t q0,
                      std::int64_t q1, std::int64_t k0, std::int64_t k1) {
  if (p.blocks == nullptr) return builtin_tile_class(p, b, q0, q1, k0, k1);
  const std::int64_t nk = (p.Sk + kTile - 1) / kTile;
  return p.blocks[((b * p.Hq + h) * query_tiles(p) + q0 / kTile) * nk + k0 / kTile];
}

// The number of entries of a mask_mod's block mask: one per (b, h, query tile, key tile).
inline std::int64_t block_count(const Problem& p) {
  return p.B * p.Hq * query_tiles(p) * ((p.Sk + kTile - 1) / kTile);
}
// The block mask of a mask_mod, into blocks[block_count(p)]: for every (b, h, query tile, key
// tile) that the built-in mask keeps, how many of its elements mask_mod keeps (none: class 0,
// all: the built-in class, else 1). Evaluates mask_mod once per element of those tiles.
inline void compute_blocks(const Problem& p, std::uint8_t* blocks) {
  const std::int64_t nq = query_tiles(p), nk = (p.Sk + kTile - 1) / kTile;
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t it = 0; it < p.B * p.Hq * nq; ++it) {
    const std::int64_t qt = it % nq, bh = it / nq, h = bh % p.Hq, b = bh / p.Hq;
    const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
    for (std::int64_t kt = 0; kt < nk; ++kt) {
      const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
      int c = builtin_tile_class(p, b, q0, q0 + rows, k0, k0 + cols);
      if (c > 0) {
        const std::int64_t n = p.mods->mask_tile(p.run, b, h, q0, rows, k0, cols, nullptr);
        c = n == 0 ? 0 : (n == rows * cols ? c : 1);
      }
      blocks[it * nk + kt] = static_cast<std::uint8_t>(c);
    }
  }
}
// The fraction of a block mask's tiles that are computed.
inline double block_fraction(const std::uint8_t* blocks, std::int64_t n) {
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) kept += blocks[i] > 0;
  return n > 0 ? static_cast<double>(kept) / static_cast<double>(n) : 1.0;
}

// ALiBi's slope of head h.
inline float alibi_slope(const Problem& p, std::int64_t h) {
  return static_cast<float>(
      std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(p.Hq)));
}

// The fraction of (query tile, key tile) pairs that the built-in mask lets the kernel compute
// (of batch row 0; -1 with cache positions, which are only known when the step runs).
inline double tile_fraction(const Problem& p) {
  if (p.pos) return -1.0;
  std::int64_t all = 0, kept = 0;
  for (std::int64_t q0 = 0; q0 < p.Sq; q0 += kTile)
    for (std::int64_t k0 = 0; k0 < p.Sk; k0 += kTile) {
      ++all;
      kept += builtin_tile_class(p, 0, q0, std::min(p.Sq, q0 + kTile), k0,
                                 std::min(p.Sk, k0 + kTile)) > 0;
    }
  return all ? static_cast<double>(kept) / static_cast<double>(all) : 1.0;
}

namespace detail {

// The micro-kernels' vector: a whole register of the target ISA. 64-byte vectors on a CPU
// without AVX-512 made g++ keep most intermediate values on the stack (9,400 of the backward
// pass's 15,700 instructions touched it): the fused attention ran 4x slower than the unfused
// chain on an AVX2 machine. Each matmul output element is summed over K in the same order
// whatever the width or the block shape; a softmax row's sum is taken in kVec lanes.
#if defined(__AVX512F__)
inline constexpr int kVec = 16;       // floats per register
inline constexpr int kBlockVecs = 4;  // columns per pass: 4 rows x 4 = 16 of 32 registers
#else
inline constexpr int kVec = 8;
// 4 rows x 2 vectors: 8 accumulators, B held in 2 registers, 6 loads per 8 FMAs. With 3 (12
// accumulators) g++ ran out of the 16 registers and read B from memory in every FMA, and a
// head size of 32 (4 vectors) left a 1-vector remainder pass: cls's backward pass was 6 % slower.
inline constexpr int kBlockVecs = 2;
#endif
typedef float vreg __attribute__((vector_size(kVec * sizeof(float))));
typedef float vregu __attribute__((vector_size(kVec * sizeof(float)), aligned(4)));

inline vreg load(const float* p) {
  return *reinterpret_cast<const vregu*>(p);
}
inline void store(float* p, vreg x) {
  *reinterpret_cast<vregu*>(p) = x;
}

// exp over a register: vec::exp_approx's clamp, reduction and polynomial on whole vectors.
// Written with vector types because g++ left the scalar call in the softmax loops unvectorised
// ("control flow in loop") once the attention kernels were inlined around it: a scalar exp per
// score was 45 % of the forward pass. Rounding to the nearest integer adds and subtracts
// 1.5 * 2^23, which is round-to-nearest-even for |t| < 2^22, as nearbyint is.
inline vreg exp_v(vreg x) {
  const vreg lo = x - x + vec::kExpMin, hi = x - x + vec::kExpMax;
  x = x < lo ? lo : x;
  x = x > hi ? hi : x;
  const vreg t = x * vec::kLog2e;
  const vreg n = (t + 12582912.f) - 12582912.f;
  const vreg q = vec::exp_reduced(x - n * vec::kLn2Hi - n * vec::kLn2Lo);
  typedef std::int32_t vint __attribute__((vector_size(kVec * sizeof(float))));
  const vint e = (__builtin_convertvector(n, vint) + 127) << 23;
  vreg scale;
  std::memcpy(&scale, &e, sizeof scale);
  return q * scale;
}
// row[j] = exp(row[j] - shift) over a 64-score tile row, 0 where the score is -inf (masked or
// padding: the clamp would otherwise give a tiny positive number). Returns the row's sum.
// Store = false only sums (the backward pass's statistics recomputation).
template <bool Store = true>
inline float exp_row(std::conditional_t<Store, float*, const float*> __restrict row, float shift) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  vreg sum = {};
  for (int j = 0; j < kTile; j += kVec) {
    const vreg x = load(row + j);
    const vreg zero = {};
    const vreg e = x == ninf ? zero : exp_v(x - shift);
    if constexpr (Store) store(row + j, e);
    sum += e;
  }
  float total = 0.f;
  for (int i = 0; i < kVec; ++i) total += sum[i];
  return total;
}

// Keeps a loaded vector in a register. g++ otherwise folds the micro-kernels' loads of B into
// every FMA that reads them (4 rows: 4 loads of each B vector instead of 1), which left the
// kernels load-bound on an AVX2 machine: 12 loads per 8 FMAs; clang kept them in registers
// and ran the backward pass 25 % faster. An empty asm that may change the value forces one load.
// NOTE: without AVX (a build without -march=native, STAG_NATIVE=OFF) an 8-float vreg fills two
// SSE registers and no single register can hold it: no pin then (it failed to compile).
inline void pin(vreg& x) {
#if defined(__x86_64__) && defined(__AVX512F__)
  asm("" : "+v"(x));
#elif defined(__x86_64__) && defined(__AVX__)
  asm("" : "+x"(x));
#else
  (void)x;
#endif
}

inline std::int64_t round_up(std::int64_t x, std::int64_t m) {
  return (x + m - 1) / m * m;
}

// Calls f.template operator()<NV>(col) for column blocks covering `nvec` vectors: full blocks
// of kBlockVecs, then the remainder.
template <class F>
inline void for_column_blocks(int nvec, F&& f) {
  int v = 0;
  for (; v + kBlockVecs <= nvec; v += kBlockVecs) f.template operator()<kBlockVecs>(v * kVec);
  switch (nvec - v) {
    case 1:
      f.template operator()<1>(v * kVec);
      break;
    case 2:
      f.template operator()<2>(v * kVec);
      break;
    case 3:
      if constexpr (kBlockVecs > 3) f.template operator()<3>(v * kVec);
      break;
    default:
      break;
  }
}

// C[M][64] = A[M][K] (row stride lda) times Bt[K][64]; M a multiple of 4. Only the first
// `cols` columns (rounded up to 16) are multiplied; the others are stored as zeros, which is
// what they would be: callers pass fewer than 64 columns only where the rest of Bt is zero
// padding (short key sequences, such as tf's 32, multiply half the tile).
inline void gemm_nt(const float* __restrict a, std::int64_t lda, const float* __restrict bt,
                    std::int64_t kdim, float* __restrict c, std::int64_t m,
                    std::int64_t cols = kTile) {
  const int nvec = static_cast<int>(round_up(std::min<std::int64_t>(cols, kTile), 16)) / kVec;
  for (std::int64_t i = 0; i < m; i += 4) {
    const float* a0 = a + i * lda;
    for_column_blocks(nvec, [&]<int NV>(int c0) {
      vreg acc[4][NV] = {};
      for (std::int64_t d = 0; d < kdim; ++d) {
        vreg bv[NV];
        for (int cc = 0; cc < NV; ++cc) {
          bv[cc] = load(bt + d * kTile + c0 + cc * kVec);
          pin(bv[cc]);
        }
        for (int r = 0; r < 4; ++r) {
          const float s = a0[r * lda + d];
          for (int cc = 0; cc < NV; ++cc) acc[r][cc] += s * bv[cc];
        }
      }
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < NV; ++cc) store(c + (i + r) * kTile + c0 + cc * kVec, acc[r][cc]);
    });
    for (int col = nvec * kVec; col < kTile; col += kVec)
      for (int r = 0; r < 4; ++r) store(c + (i + r) * kTile + col, vreg{});
  }
}

// C[M][N] += A[M][K] (row stride lda) times B[K][N] (row stride ldb = ldc); M a multiple of 4,
// N a multiple of 16.
inline void gemm_nn(const float* __restrict a, std::int64_t lda, const float* __restrict b,
                    std::int64_t n, std::int64_t kdim, float* __restrict c, std::int64_t m) {
  for (std::int64_t i = 0; i < m; i += 4) {
    const float* a0 = a + i * lda;
    for_column_blocks(static_cast<int>(n / kVec), [&]<int NV>(int col) {
      vreg acc[4][NV];
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < NV; ++cc) acc[r][cc] = load(c + (i + r) * n + col + cc * kVec);
      for (std::int64_t x = 0; x < kdim; ++x) {
        vreg bv[NV];
        for (int cc = 0; cc < NV; ++cc) {
          bv[cc] = load(b + x * n + col + cc * kVec);
          pin(bv[cc]);
        }
        for (int r = 0; r < 4; ++r) {
          const float s = a0[r * lda + x];
          for (int cc = 0; cc < NV; ++cc) acc[r][cc] += s * bv[cc];
        }
      }
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < NV; ++cc) store(c + (i + r) * n + col + cc * kVec, acc[r][cc]);
    });
  }
}

// dst[64][64] = src^T for a 64 x 64 tile.
inline void transpose_tile(const float* __restrict src, float* __restrict dst) {
  for (int i = 0; i < kTile; i += 8)
    for (int j = 0; j < kTile; ++j)
      for (int r = 0; r < 8; ++r) dst[j * kTile + i + r] = src[(i + r) * kTile + j];
}

// Rows [r0, r0 + rows) of a strided [S, D] matrix into a zero-padded [64][ld] tile, times
// `scale` (the query tile is packed pre-scaled, so that scores need no multiply).
inline void pack_rows(const float* src, std::int64_t row_stride, std::int64_t r0, std::int64_t rows,
                      std::int64_t d, std::int64_t ld, float* dst, float scale = 1.f) {
  std::memset(dst, 0, sizeof(float) * static_cast<std::size_t>(kTile * ld));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* s = src + (r0 + r) * row_stride;
    float* t = dst + r * ld;
    if (scale == 1.f) {
      std::memcpy(t, s, sizeof(float) * static_cast<std::size_t>(d));
    } else {
#pragma omp simd
      for (std::int64_t x = 0; x < d; ++x) t[x] = s[x] * scale;
    }
  }
}
// The same rows transposed into a zero-padded [d][64] tile.
inline void pack_cols(const float* src, std::int64_t row_stride, std::int64_t r0, std::int64_t rows,
                      std::int64_t d, float* dst) {
  std::memset(dst, 0, sizeof(float) * static_cast<std::size_t>(kTile * d));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* s = src + (r0 + r) * row_stride;
    for (std::int64_t x = 0; x < d; ++x) dst[x * kTile + r] = s[x];
  }
}

// Applies the score modification (built-in, or the user's score_mod) and then the masks
// (built-in, keep mask, mask_mod) to the scaled scores of one tile: masked and padding keys
// get -inf. With `dmod`, also d(modified score) / d(score) per element (the
// backward's chain rule through soft-capping; 1 elsewhere, which callers then skip).
inline void mask_scores(const Problem& p, int cls, std::int64_t b, std::int64_t h, std::int64_t q0,
                        std::int64_t rows, std::int64_t k0, std::int64_t cols, float* s,
                        float* dmod = nullptr) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  if (p.mods != nullptr && p.mods->score_tile != nullptr)
    p.mods->score_tile(p.run, b, h, q0, rows, k0, cols, s);
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * kTile;
    if (p.score_mod == ScoreMod::alibi) {
      const float m = alibi_slope(p, h);
      const float qpos = static_cast<float>(q0 + r + key_offset(p, b) - k0);
#pragma omp simd
      for (int j = 0; j < kTile; ++j) row[j] -= m * (qpos - static_cast<float>(j));
    } else if (p.score_mod == ScoreMod::softcap) {
      const float c = p.softcap, inv = 1.f / p.softcap;
      float* d = dmod ? dmod + r * kTile : nullptr;
      for (int j = 0; j < kTile; j += kVec) {
        // NOTE: tanh(x) = 1 - 2 / (exp(2x) + 1); exp_v saturates, so large |x| give +-1.
        const vreg t = 1.f - 2.f / (exp_v(2.f * load(row + j) * inv) + 1.f);
        store(row + j, c * t);
        if (d) store(d + j, 1.f - t * t);
      }
    }
    for (std::int64_t j = cols; j < kTile; ++j) row[j] = ninf;
    if (cls == 2) continue;
    // The masks' tests, a loop each, so that the common ones (a causal diagonal tile, a padding
    // mask with contiguous keys) vectorise.
    if (row_inactive(p, b)) {
      std::fill(row, row + cols, ninf);
      continue;
    }
    if (p.mask != MaskKind::none) {
      // Columns [lo, hi] are kept.
      const std::int64_t hi = q0 + r + key_offset(p, b) - k0;
      const std::int64_t lo = p.mask == MaskKind::sliding_window ? hi - p.window + 1 : 0;
      std::fill(row, row + std::clamp<std::int64_t>(lo, 0, cols), ninf);
      std::fill(row + std::clamp<std::int64_t>(hi + 1, 0, cols), row + cols, ninf);
    }
    if (p.keep != nullptr) {
      const bool* kr = p.keep + b * p.keep_st[0] + h * p.keep_st[1] + (q0 + r) * p.keep_st[2] +
                       k0 * p.keep_st[3];
      const std::int64_t ks = p.keep_st[3];
      if (ks == 1) {
#pragma omp simd
        for (std::int64_t j = 0; j < cols; ++j) {
          const float x = row[j];
          row[j] = kr[j] ? x : ninf;
        }
      } else {
        for (std::int64_t j = 0; j < cols; ++j) row[j] = kr[j * ks] ? row[j] : ninf;
      }
    }
  }
  if (p.mods != nullptr && p.mods->mask_tile != nullptr && cls != 2)
    p.mods->mask_tile(p.run, b, h, q0, rows, k0, cols, s);
}

// Dropout factors of one tile row: drop_scale where kept, 0 where dropped.
inline void dropout_row(const Problem& p, std::uint64_t base, float* __restrict z) {
  // Locals, not loads from p under the condition (a conditional load does not vectorise).
  const std::uint64_t stream = p.stream, first = p.index_offset + base, threshold = p.threshold;
  const float keep = p.drop_scale;
#pragma omp simd
  for (int j = 0; j < kTile; ++j) {
    const std::uint64_t bits = random::mix(stream ^ (first + static_cast<std::uint64_t>(j))) >> 11;
    z[j] = bits >= threshold ? keep : 0.f;
  }
}

// Per-thread tile buffers.
struct Scratch {
  std::vector<float> qp, kt, kp, vp, vt, s, pt, acc, dop, dq, dmod, raw;
  void ensure(std::int64_t dkp, std::int64_t dvp, std::int64_t dk, std::int64_t dv) {
    const auto t = static_cast<std::size_t>(kTile);
    qp.resize(t * static_cast<std::size_t>(dkp));
    kt.resize(t * static_cast<std::size_t>(dk));
    kp.resize(t * static_cast<std::size_t>(dkp));
    vp.resize(t * static_cast<std::size_t>(dvp));
    vt.resize(t * static_cast<std::size_t>(dv));
    s.resize(t * t);
    pt.resize(t * t);
    dmod.resize(t * t);
    raw.resize(t * t);
    acc.resize(t * static_cast<std::size_t>(dvp));
    dop.resize(t * static_cast<std::size_t>(dvp));
    dq.resize(t * static_cast<std::size_t>(dkp));
  }
};

// The forward pass's tile buffers (grown, never shrunk).
struct ForwardScratch {
  std::vector<float> qp, kt, vp, s, acc;
  void ensure(std::int64_t dkp, std::int64_t dvp, std::int64_t dk) {
    const auto t = static_cast<std::size_t>(kTile);
    const auto grow = [](std::vector<float>& v, std::size_t n) {
      if (v.size() < n) v.resize(n);
    };
    grow(qp, t * static_cast<std::size_t>(dkp));
    grow(kt, t * static_cast<std::size_t>(dk));
    grow(vp, t * static_cast<std::size_t>(dvp));
    grow(s, t * t);
    grow(acc, t * static_cast<std::size_t>(dvp));
  }
};

// The largest of a tile row's 64 scores (-inf when all are masked).
inline float row_max(const float* __restrict x) {
  vreg m = load(x);
  for (int j = kVec; j < kTile; j += kVec) {
    const vreg y = load(x + j);
    m = m > y ? m : y;
  }
  float r = m[0];
  for (int j = 1; j < kVec; ++j) r = m[j] > r ? m[j] : r;
  return r;
}

inline std::int64_t key_tiles(const Problem& p) {
  return (p.Sk + kTile - 1) / kTile;
}

}  // namespace detail

// Forward: o [B, Hq, Sq, Dv] (contiguous) and, when lse is not null, the log-sum-exp of each
// row's scaled, masked scores [B, Hq, Sq] (-inf for a fully masked row).
// NOTE: a fully masked row has l = 0: its output is 0 (not 0/0) and its lse -inf, which the
// backward pass reads as "no probabilities".
inline void forward(const Problem& p, float* o, float* lse) {
  using namespace detail;
  const std::int64_t dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const std::int64_t nq = (p.Sq + kTile - 1) / kTile, nk = key_tiles(p);
  const std::int64_t group = p.Hq / p.Hkv;
  const std::int64_t items = p.B * p.Hq * nq;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    // The tile buffers of this thread, kept across calls: every buffer read is packed or
    // cleared before its use, so nothing carries over (a decode step calls this per layer, and
    // allocating and zeroing them each time cost more than the tiles of one query row).
    thread_local ForwardScratch w;
    w.ensure(dkp, dvp, p.Dk);
    float m[kTile], l[kTile];
#pragma omp for schedule(dynamic)
    for (std::int64_t it = 0; it < items; ++it) {
      const std::int64_t qt = it % nq, bh = it / nq, h = bh % p.Hq, b = bh / p.Hq;
      const std::int64_t kvh = h / group;
      const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
      const std::int64_t rows4 = round_up(rows, 4);
      const float* qb = p.q + b * p.q_st[0] + h * p.q_st[1];
      const float* kb = p.k + b * p.k_st[0] + kvh * p.k_st[1];
      const float* vb = p.v + b * p.v_st[0] + kvh * p.v_st[1];
      pack_rows(qb, p.q_st[2], q0, rows, p.Dk, dkp, w.qp.data(), p.scale);
      std::fill_n(w.acc.begin(), kTile * dvp, 0.f);
      for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
      // With a built-in mask no key after the tile's last query's position is kept: the loop
      // stops there (with cache positions, the cost follows pos + Sq rather than Sk).
      const std::int64_t nk_row =
          row_inactive(p, b) ? 0
          : p.mask == MaskKind::none
              ? nk
              : std::clamp<std::int64_t>((q0 + rows - 1 + key_offset(p, b)) / kTile + 1, 0, nk);
      for (std::int64_t kt = 0; kt < nk_row; ++kt) {
        const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
        const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
        if (cls == 0) continue;
        pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
        pack_rows(vb, p.v_st[2], k0, cols, p.Dv, dvp, w.vp.data());
        float* s = w.s.data();
        gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, s, rows4, cols);
        mask_scores(p, cls, b, h, q0, rows, k0, cols, s);
        for (std::int64_t r = 0; r < rows; ++r) {
          float* row = s + r * kTile;
          const float mx = row_max(row);
          const float mn = std::max(m[r], mx);
          if (mn == ninf) {  // nothing kept so far in this row
            std::fill(row, row + kTile, 0.f);
            continue;
          }
          const float alpha = m[r] == ninf ? 0.f : vec::exp_approx(m[r] - mn);
          const float sum = exp_row(row, mn);
          l[r] = l[r] * alpha + sum;
          m[r] = mn;
          float* a = w.acc.data() + r * dvp;
#pragma omp simd
          for (std::int64_t x = 0; x < dvp; ++x) a[x] *= alpha;
          if (p.dropout) {
            float z[kTile];
            dropout_row(p, static_cast<std::uint64_t>(((b * p.Hq + h) * p.Sq + q0 + r) * p.Sk + k0),
                        z);
#pragma omp simd
            for (int j = 0; j < kTile; ++j) row[j] *= z[j];
          }
        }
        for (std::int64_t r = rows; r < rows4; ++r)
          std::fill(s + r * kTile, s + (r + 1) * kTile, 0.f);
        // Keys past `cols` have P = 0 and zero rows of V: they add nothing.
        gemm_nn(s, kTile, w.vp.data(), dvp, cols, w.acc.data(), rows4);
      }
      float* ob = o + ((b * p.Hq + h) * p.Sq + q0) * p.Dv;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        const float* a = w.acc.data() + r * dvp;
        for (std::int64_t x = 0; x < p.Dv; ++x) ob[r * p.Dv + x] = a[x] * inv;
        if (lse) lse[(b * p.Hq + h) * p.Sq + q0 + r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
      }
    }
  }
}

// Backward (with the query tile pre-scaled, dk = dS^T (scale q) needs no further scaling):
// dq [B, Hq, Sq, Dk], dk [B, Hkv, Sk, Dk], dv [B, Hkv, Sk, Dv] (contiguous, written,
// not accumulated) from o and do (strides as q's in `o_st`/`do_st`) and the forward's lse.
// When lse is null the row statistics are recomputed first (one more pass of q k^T).
// Parallel over (batch, key/value head): each work item owns its dk and dv rows.
// cap_grads[j] (or null): the gradient of score_mod's captured tensor j, contiguous in its
// shape. Each work item accumulates its own copy, summed in item order afterwards, so the
// result does not depend on the thread count or the schedule.
inline void backward(const Problem& p, const float* o, const std::int64_t* o_st, const float* dout,
                     const std::int64_t* do_st, const float* lse_saved, float* dq, float* dk,
                     float* dv, float* const* cap_grads = nullptr) {
  using namespace detail;
  const std::int64_t dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const std::int64_t nq = (p.Sq + kTile - 1) / kTile, nk = key_tiles(p);
  const std::int64_t skp = nk * kTile;
  const std::int64_t group = p.Hq / p.Hkv;
  const std::int64_t items = p.B * p.Hkv;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const bool user_score = p.mods != nullptr && p.mods->score_grad_tile != nullptr;
  std::int64_t cap_n[kMaxCaptures] = {}, cap_off[kMaxCaptures] = {}, cap_total = 0;
  if (user_score && cap_grads != nullptr)
    for (int j = 0; j < p.mods->n_score; ++j)
      if (cap_grads[j] != nullptr) {
        const CapView& c = p.run.caps[j];
        cap_n[j] = 1;
        for (int d = 0; d < c.rank; ++d) cap_n[j] *= c.dims[d];
        cap_off[j] = cap_total;
        cap_total += cap_n[j];
      }
  std::vector<float> cap_acc(static_cast<std::size_t>(items * cap_total));
  // Without wanted capture gradients, the cheaper d/d(score)-only pass.
  const auto grad_tile =
      user_score ? (cap_total > 0 ? p.mods->score_grad_tile : p.mods->score_dtile) : nullptr;
#pragma omp parallel
  {
    Scratch w;
    w.ensure(dkp, dvp, p.Dk, p.Dv);
    std::vector<float> dk_acc(static_cast<std::size_t>(skp * dkp)),
        dv_acc(static_cast<std::size_t>(skp * dvp));
    float lse[kTile], di[kTile], z[kTile * kTile];
#pragma omp for schedule(dynamic)
    for (std::int64_t it = 0; it < items; ++it) {
      const std::int64_t kvh = it % p.Hkv, b = it / p.Hkv;
      float* cg[kMaxCaptures] = {};
      for (int j = 0; j < kMaxCaptures; ++j)
        if (cap_n[j] > 0) cg[j] = cap_acc.data() + it * cap_total + cap_off[j];
      std::fill(dk_acc.begin(), dk_acc.end(), 0.f);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.f);
      const float* kb = p.k + b * p.k_st[0] + kvh * p.k_st[1];
      const float* vb = p.v + b * p.v_st[0] + kvh * p.v_st[1];
      for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const float* qb = p.q + b * p.q_st[0] + h * p.q_st[1];
        const float* obh = o + b * o_st[0] + h * o_st[1];
        const float* dob = dout + b * do_st[0] + h * do_st[1];
        for (std::int64_t qt = 0; qt < nq; ++qt) {
          const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
          const std::int64_t rows4 = round_up(rows, 4);
          pack_rows(qb, p.q_st[2], q0, rows, p.Dk, dkp, w.qp.data(), p.scale);
          pack_rows(dob, do_st[2], q0, rows, p.Dv, dvp, w.dop.data());
          for (std::int64_t r = 0; r < kTile; ++r) {
            float d = 0.f;
            if (r < rows) {
              const float* orow = obh + (q0 + r) * o_st[2];
              const float* grow = w.dop.data() + r * dvp;
              for (std::int64_t x = 0; x < p.Dv; ++x) d += orow[x] * grow[x];
            }
            di[r] = d;
            lse[r] = ninf;
          }
          if (lse_saved) {
            for (std::int64_t r = 0; r < rows; ++r)
              lse[r] = lse_saved[(b * p.Hq + h) * p.Sq + q0 + r];
          } else {
            float m[kTile], l[kTile];
            for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
            for (std::int64_t kt = 0; kt < nk; ++kt) {
              const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
              const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
              if (cls == 0) continue;
              pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
              gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, w.s.data(), rows4, cols);
              mask_scores(p, cls, b, h, q0, rows, k0, cols, w.s.data());
              for (std::int64_t r = 0; r < rows; ++r) {
                const float* row = w.s.data() + r * kTile;
                const float mn = std::max(m[r], row_max(row));
                if (mn == ninf) continue;
                const float sum = exp_row<false>(row, mn);
                l[r] = (m[r] == ninf ? 0.f : l[r] * vec::exp_approx(m[r] - mn)) + sum;
                m[r] = mn;
              }
            }
            for (std::int64_t r = 0; r < rows; ++r)
              lse[r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
          }
          std::fill(w.dq.begin(), w.dq.end(), 0.f);
          for (std::int64_t kt = 0; kt < nk; ++kt) {
            const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
            const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
            if (cls == 0) continue;
            pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
            pack_rows(kb, p.k_st[2], k0, cols, p.Dk, dkp, w.kp.data());
            pack_cols(vb, p.v_st[2], k0, cols, p.Dv, w.vt.data());
            float* s = w.s.data();    // scores, then probabilities P
            float* dp = w.pt.data();  // dP, then dS
            gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, s, rows4, cols);
            if (user_score) std::copy(s, s + kTile * kTile, w.raw.data());
            const bool capped = p.score_mod == ScoreMod::softcap;
            mask_scores(p, cls, b, h, q0, rows, k0, cols, s, capped ? w.dmod.data() : nullptr);
            gemm_nt(w.dop.data(), dvp, w.vt.data(), p.Dv, dp, rows4, cols);
            for (std::int64_t r = 0; r < kTile; ++r) {
              float* srow = s + r * kTile;
              float* dprow = dp + r * kTile;
              float* zr = z + r * kTile;
              if (r >= rows || lse[r] == ninf) {
                std::fill(srow, srow + kTile, 0.f);
                std::fill(dprow, dprow + kTile, 0.f);
                std::fill(zr, zr + kTile, 0.f);
                continue;
              }
              const float lr = lse[r];
              exp_row(srow, lr);
              if (p.dropout) {
                dropout_row(
                    p, static_cast<std::uint64_t>(((b * p.Hq + h) * p.Sq + q0 + r) * p.Sk + k0),
                    zr);
              } else {
                std::fill(zr, zr + kTile, 1.f);
              }
              const float d = di[r];
#pragma omp simd
              for (int j = 0; j < kTile; ++j) {
                const float pj = srow[j];
                dprow[j] = pj * (dprow[j] * zr[j] - d);  // dS
                srow[j] = pj * zr[j];                    // dropped P, for dV
              }
              if (capped) {
                const float* dm = w.dmod.data() + r * kTile;
#pragma omp simd
                for (int j = 0; j < kTile; ++j) dprow[j] *= dm[j];
              }
            }
            // Through score_mod: dS of the raw score, and its captured tensors' gradients.
            if (user_score) grad_tile(p.run, b, h, q0, rows, k0, cols, w.raw.data(), dp, cg);
            // dV += P^T dO, dK += dS^T Q (scaled at the end), dQ += dS K.
            float t[kTile * kTile];
            // Key rows past `cols` (padding: P and dS are 0 there) are neither accumulated into
            // dV and dK (never read) nor summed into dQ (they would add zeros).
            const std::int64_t cols4 = round_up(cols, 4);
            transpose_tile(s, t);
            gemm_nn(t, kTile, w.dop.data(), dvp, rows4, dv_acc.data() + k0 * dvp, cols4);
            transpose_tile(dp, t);
            gemm_nn(t, kTile, w.qp.data(), dkp, rows4, dk_acc.data() + k0 * dkp, cols4);
            gemm_nn(dp, kTile, w.kp.data(), dkp, cols, w.dq.data(), rows4);
          }
          float* dqb = dq + ((b * p.Hq + h) * p.Sq + q0) * p.Dk;
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t x = 0; x < p.Dk; ++x)
              dqb[r * p.Dk + x] = w.dq[static_cast<std::size_t>(r * dkp + x)] * p.scale;
        }
      }
      float* dkb = dk + (b * p.Hkv + kvh) * p.Sk * p.Dk;
      float* dvb = dv + (b * p.Hkv + kvh) * p.Sk * p.Dv;
      for (std::int64_t r = 0; r < p.Sk; ++r) {
        for (std::int64_t x = 0; x < p.Dk; ++x)
          dkb[r * p.Dk + x] = dk_acc[static_cast<std::size_t>(r * dkp + x)];
        for (std::int64_t x = 0; x < p.Dv; ++x)
          dvb[r * p.Dv + x] = dv_acc[static_cast<std::size_t>(r * dvp + x)];
      }
    }
  }
  for (int j = 0; j < kMaxCaptures; ++j) {
    if (cap_n[j] == 0) continue;
    std::fill(cap_grads[j], cap_grads[j] + cap_n[j], 0.f);
    for (std::int64_t it = 0; it < items; ++it) {
      const float* a = cap_acc.data() + it * cap_total + cap_off[j];
      for (std::int64_t e = 0; e < cap_n[j]; ++e) cap_grads[j][e] += a[e];
    }
  }
}

}  // namespace stag::attn

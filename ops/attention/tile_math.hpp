// The attention kernels' tile arithmetic over GCC/clang vector types (a whole register of the
// build's ISA): the exponentials of a softmax row, the f32 micro-kernels and their packing,
// the scores' modifications and masks, dropout factors and a row's maximum. Used by tiled.hpp's
// f32 kernels; tiled_bf16.hpp's kernels use the f32 parts (softmax, masks, dropout) around
// their own bf16 products.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include <stag/ops/attention/tiles.hpp>
#include <stag/ops/random.hpp>
#include <stag/ops/vec.hpp>

namespace stag::attn::detail {

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

// The forward pass's online softmax over one tile of scaled, masked scores `s` (rows of 64):
// each row's running maximum m and sum l move on, its accumulator row (of `acc`, row stride
// acc_ld) is rescaled, and the row becomes its unnormalised probabilities (after dropout).
// Rows [rows, round_up(rows, 4)) are zeroed, for the micro-kernels' blocks of 4.
inline void online_softmax_tile(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t q0,
                                std::int64_t k0, std::int64_t rows, float* s, float* m, float* l,
                                float* acc, std::int64_t acc_ld) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = s + r * kTile;
    const float mn = std::max(m[r], row_max(row));
    if (mn == ninf) {  // nothing kept so far in this row
      std::fill(row, row + kTile, 0.f);
      continue;
    }
    const float alpha = m[r] == ninf ? 0.f : vec::exp_approx(m[r] - mn);
    l[r] = l[r] * alpha + exp_row(row, mn);
    m[r] = mn;
    float* a = acc + r * acc_ld;
#pragma omp simd
    for (std::int64_t x = 0; x < acc_ld; ++x) a[x] *= alpha;
    if (p.dropout) {
      float z[kTile];
      dropout_row(p, static_cast<std::uint64_t>(((b * p.Hq + h) * p.Sq + q0 + r) * p.Sk + k0), z);
#pragma omp simd
      for (int j = 0; j < kTile; ++j) row[j] *= z[j];
    }
  }
  for (std::int64_t r = rows; r < (rows + 3) / 4 * 4; ++r)
    std::fill(s + r * kTile, s + (r + 1) * kTile, 0.f);
}

// The backward pass's recomputation of the row statistics (no saved log-sum-exp): the running
// maximum m and sum l of each row move on over one tile of scaled, masked scores.
inline void row_statistics_tile(std::int64_t rows, const float* s, float* m, float* l) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = s + r * kTile;
    const float mn = std::max(m[r], row_max(row));
    if (mn == ninf) continue;
    const float sum = exp_row<false>(row, mn);
    l[r] = (m[r] == ninf ? 0.f : l[r] * vec::exp_approx(m[r] - mn)) + sum;
    m[r] = mn;
  }
}

// The backward pass over one tile: from the scaled, masked scores `s` and dP = dO v^T in `dp`,
// with each row's log-sum-exp and D = o . dO, `s` becomes P after dropout (for dV) and `dp`
// becomes dS = P (z dP - D), times d(capped score)/d(score) where `dmod` is given (soft-capping).
// All 64 rows are written: rows past `rows` or without probabilities are zeros.
inline void softmax_backward_tile(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t q0,
                                  std::int64_t k0, std::int64_t rows, const float* lse,
                                  const float* di, const float* dmod, float* s, float* dp) {
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  float z[kTile];
  for (std::int64_t r = 0; r < kTile; ++r) {
    float* srow = s + r * kTile;
    float* dprow = dp + r * kTile;
    if (r >= rows || lse[r] == ninf) {
      std::fill(srow, srow + kTile, 0.f);
      std::fill(dprow, dprow + kTile, 0.f);
      continue;
    }
    exp_row(srow, lse[r]);
    if (p.dropout)
      dropout_row(p, static_cast<std::uint64_t>(((b * p.Hq + h) * p.Sq + q0 + r) * p.Sk + k0), z);
    else
      std::fill(z, z + kTile, 1.f);
    const float d = di[r];
#pragma omp simd
    for (int j = 0; j < kTile; ++j) {
      const float pj = srow[j];
      dprow[j] = pj * (dprow[j] * z[j] - d);  // dS
      srow[j] = pj * z[j];                    // dropped P, for dV
    }
    if (dmod != nullptr) {
      const float* dm = dmod + r * kTile;
#pragma omp simd
      for (int j = 0; j < kTile; ++j) dprow[j] *= dm[j];
    }
  }
}

}  // namespace stag::attn::detail

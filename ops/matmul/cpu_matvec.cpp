// A matmul of a few rows by a large weight stored as [N, K] rows (a linear layer's or a tied
// output layer's weight, read through matmul_nt): the decode step of a language model at batch
// 1-4. Such a product reads every weight once and does 2 M flops per weight element, so its
// speed is the memory's. oneDNN 2.6's brgemm read these weights at 12-13 GB/s on a 2-core AMD
// EPYC whose plain loads reach 28 GB/s (docs/pretrained.md); this kernel streams each weight
// row once, in order, and dots it with the M input rows held in L1:
//   bf16 operands: vdpbf16ps (AVX512-BF16), 32 products per instruction, f32 sums;
//   f32 operands: AVX-512 FMA, 16 per instruction.
// On a CPU without those (AVX2 + FMA only, or AVX-512 without AVX512-BF16 for bf16 operands)
// the same loops run on 8 lanes: the input rows widened once to f32, bf16 weights widened 8 at a
// time as they stream by (a bf16 is the upper half of an f32, so the products are the same).
// The folded consumers (bias, scale, activation) run on each finished output in f32. Each
// output is one f32 dot product (partial sums in 16 or 8 lanes, then added), so results differ
// from oneDNN's in the order of the sums only. Without AVX2 and FMA the oneDNN kernel runs.
#include <immintrin.h>
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <stag/ops/attention/tiled_bf16.hpp>
#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/matmul/matmul.hpp>

#if !defined(__x86_64__)
#error "ops/matmul/cpu_matvec.cpp is x86-64 code"
#endif

#define STAG_MATVEC_BF16_TARGET \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
#define STAG_MATVEC_F32_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma")))
#define STAG_MATVEC_AVX2_TARGET __attribute__((target("avx2,fma")))

namespace stag {
namespace {

using i64 = std::int64_t;
using u16 = std::uint16_t;

// The sum of the 16 lanes, by swapping halves; the masked forms with every lane set, since
// g++ 12 warns about the undefined operands of the unmasked ones (and _mm512_reduce_add_ps).
STAG_MATVEC_F32_TARGET inline float lane_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xFFFF, v, v, 0x4E));  // 256-bit halves
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, 0xFFFF, v, v, 0xB1));  // 128-bit quarters
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, 0xFFFF, v, 0x4E));  // pairs within each quarter
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, 0xFFFF, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

// c[m * ldc] = x_m . w for the M rows of x (row stride ldx) and one weight row w, K elements
// each: bf16 pairs into f32 lanes, two accumulators per row of x (vdpbf16ps's latency).
// Rows are taken one at a time: one sequential stream through the weight, which this
// machine's prefetchers follow better than four interleaved ones (Qwen2.5-0.5B's decode step:
// 51-58 ms against 66-69 with four rows at a time; software prefetching gained nothing).
template <int M>
STAG_MATVEC_BF16_TARGET void row_bf16(const u16* __restrict x, i64 ldx, const u16* __restrict w,
                                      i64 k, float* __restrict c, i64 ldc) {
  __m512 acc0[M], acc1[M];
  for (int m = 0; m < M; ++m) acc0[m] = acc1[m] = _mm512_setzero_ps();
  i64 i = 0;
  for (; i + 64 <= k; i += 64) {
    const __m512i w0 = _mm512_loadu_si512(w + i), w1 = _mm512_loadu_si512(w + i + 32);
    for (int m = 0; m < M; ++m) {
      acc0[m] =
          _mm512_dpbf16_ps(acc0[m], (__m512bh)_mm512_loadu_si512(x + m * ldx + i), (__m512bh)w0);
      acc1[m] = _mm512_dpbf16_ps(acc1[m], (__m512bh)_mm512_loadu_si512(x + m * ldx + i + 32),
                                 (__m512bh)w1);
    }
  }
  for (; i < k; i += 32) {  // what is left, 32 at a time; masked-off lanes load as zero
    const i64 left = std::min<i64>(32, k - i);
    const __mmask32 mask = static_cast<__mmask32>((std::uint64_t{1} << left) - 1);
    const __m512i wv = _mm512_maskz_loadu_epi16(mask, w + i);
    for (int m = 0; m < M; ++m)
      acc0[m] = _mm512_dpbf16_ps(acc0[m], (__m512bh)_mm512_maskz_loadu_epi16(mask, x + m * ldx + i),
                                 (__m512bh)wv);
  }
  for (int m = 0; m < M; ++m) c[m * ldc] = lane_sum(_mm512_add_ps(acc0[m], acc1[m]));
}

// The same for f32 operands, 16 lanes.
template <int M>
STAG_MATVEC_F32_TARGET void row_f32(const float* __restrict x, i64 ldx, const float* __restrict w,
                                    i64 k, float* __restrict c, i64 ldc) {
  __m512 acc0[M], acc1[M];
  for (int m = 0; m < M; ++m) acc0[m] = acc1[m] = _mm512_setzero_ps();
  i64 i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m512 w0 = _mm512_loadu_ps(w + i), w1 = _mm512_loadu_ps(w + i + 16);
    for (int m = 0; m < M; ++m) {
      acc0[m] = _mm512_fmadd_ps(_mm512_loadu_ps(x + m * ldx + i), w0, acc0[m]);
      acc1[m] = _mm512_fmadd_ps(_mm512_loadu_ps(x + m * ldx + i + 16), w1, acc1[m]);
    }
  }
  for (; i < k; i += 16) {
    const i64 left = std::min<i64>(16, k - i);
    const __mmask16 mask = static_cast<__mmask16>((1u << left) - 1);
    const __m512 wv = _mm512_maskz_loadu_ps(mask, w + i);
    for (int m = 0; m < M; ++m)
      acc0[m] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mask, x + m * ldx + i), wv, acc0[m]);
  }
  for (int m = 0; m < M; ++m) c[m * ldc] = lane_sum(_mm512_add_ps(acc0[m], acc1[m]));
}

// A weight stored as [K, N] rows (GPT-2's Conv1D, y = x W): y_m += x_mk W_k over weight rows
// k0 .. k1 - 1, into the f32 partial sums y (M rows of N, row stride n), four weight rows per
// pass over y. A thread streams its rows of W in order; the partial sums stay in L1 / L2.
template <int M>
STAG_MATVEC_F32_TARGET void axpy_f32(const float* __restrict x, i64 ldx, const float* __restrict w,
                                     i64 ldw, i64 k0, i64 k1, i64 n, float* __restrict y) {
  for (i64 k = k0; k < k1; k += 4) {
    const int rows = static_cast<int>(std::min<i64>(4, k1 - k));
    __m512 xb[M][4];
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < 4; ++r) xb[m][r] = _mm512_set1_ps(r < rows ? x[m * ldx + k + r] : 0.f);
    const float* wr[4];
    for (int r = 0; r < 4; ++r) wr[r] = w + (k + std::min(r, rows - 1)) * ldw;
    for (i64 j = 0; j < n; j += 16) {
      const __mmask16 mask =
          j + 16 <= n ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - j)) - 1);
      __m512 wv[4];
      for (int r = 0; r < 4; ++r) wv[r] = _mm512_maskz_loadu_ps(mask, wr[r] + j);
      for (int m = 0; m < M; ++m) {
        __m512 acc = _mm512_maskz_loadu_ps(mask, y + m * n + j);
        for (int r = 0; r < 4; ++r) acc = _mm512_fmadd_ps(xb[m][r], wv[r], acc);
        _mm512_mask_storeu_ps(y + m * n + j, mask, acc);
      }
    }
  }
}

// The same for bf16 operands: each 16 bf16 weights widened exactly to f32 (a bf16 is the upper
// half of an f32), then f32 FMAs.
STAG_MATVEC_BF16_TARGET inline __m512 widen16(const u16* p, __mmask16 mask) {
  const __m256i h = _mm256_maskz_loadu_epi16(mask, p);
  // The zero-masked forms with every lane set: g++ 12 warns about the plain ones' operands.
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
}
inline float bf16_value(u16 v) {
  const std::uint32_t bits = std::uint32_t{v} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
template <int M>
STAG_MATVEC_BF16_TARGET void axpy_bf16(const u16* __restrict x, i64 ldx, const u16* __restrict w,
                                       i64 ldw, i64 k0, i64 k1, i64 n, float* __restrict y) {
  for (i64 k = k0; k < k1; k += 4) {
    const int rows = static_cast<int>(std::min<i64>(4, k1 - k));
    __m512 xb[M][4];
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < 4; ++r)
        xb[m][r] = _mm512_set1_ps(r < rows ? bf16_value(x[m * ldx + k + r]) : 0.f);
    const u16* wr[4];
    for (int r = 0; r < 4; ++r) wr[r] = w + (k + std::min(r, rows - 1)) * ldw;
    for (i64 j = 0; j < n; j += 16) {
      const __mmask16 mask =
          j + 16 <= n ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - j)) - 1);
      __m512 wv[4];
      for (int r = 0; r < 4; ++r) wv[r] = widen16(wr[r] + j, mask);
      for (int m = 0; m < M; ++m) {
        __m512 acc = _mm512_maskz_loadu_ps(mask, y + m * n + j);
        for (int r = 0; r < 4; ++r) acc = _mm512_fmadd_ps(xb[m][r], wv[r], acc);
        _mm512_mask_storeu_ps(y + m * n + j, mask, acc);
      }
    }
  }
}

// AVX2 + FMA, 8 lanes: x in f32 (bf16 rows widened once per run), the weight in f32 or bf16.
STAG_MATVEC_AVX2_TARGET inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
STAG_MATVEC_AVX2_TARGET inline __m256 load8(const u16* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float value(float v) {
  return v;
}
inline float value(u16 v) {
  return bf16_value(v);
}

STAG_MATVEC_AVX2_TARGET inline float lane_sum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// row_bf16 / row_f32 on 8 lanes; the K tail (under 16) in scalar code.
template <int M, class W>
STAG_MATVEC_AVX2_TARGET void row_avx2(const float* __restrict x, i64 ldx, const W* __restrict w,
                                      i64 k, float* __restrict c, i64 ldc) {
  __m256 acc0[M], acc1[M];
  for (int m = 0; m < M; ++m) acc0[m] = acc1[m] = _mm256_setzero_ps();
  i64 i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 w0 = load8(w + i), w1 = load8(w + i + 8);
    for (int m = 0; m < M; ++m) {
      acc0[m] = _mm256_fmadd_ps(_mm256_loadu_ps(x + m * ldx + i), w0, acc0[m]);
      acc1[m] = _mm256_fmadd_ps(_mm256_loadu_ps(x + m * ldx + i + 8), w1, acc1[m]);
    }
  }
  for (int m = 0; m < M; ++m) {
    float sum = lane_sum8(_mm256_add_ps(acc0[m], acc1[m]));
    for (i64 j = i; j < k; ++j) sum += x[m * ldx + j] * value(w[j]);
    c[m * ldc] = sum;
  }
}

// axpy_f32 / axpy_bf16 on 8 lanes; the N tail (under 8) in scalar code.
template <int M, class W>
STAG_MATVEC_AVX2_TARGET void axpy_avx2(const float* __restrict x, i64 ldx, const W* __restrict w,
                                       i64 ldw, i64 k0, i64 k1, i64 n, float* __restrict y) {
  for (i64 k = k0; k < k1; k += 4) {
    const int rows = static_cast<int>(std::min<i64>(4, k1 - k));
    float xs[M][4];
    __m256 xb[M][4];
    for (int m = 0; m < M; ++m)
      for (int r = 0; r < 4; ++r) {
        xs[m][r] = r < rows ? x[m * ldx + k + r] : 0.f;
        xb[m][r] = _mm256_set1_ps(xs[m][r]);
      }
    const W* wr[4];
    for (int r = 0; r < 4; ++r) wr[r] = w + (k + std::min(r, rows - 1)) * ldw;
    i64 j = 0;
    for (; j + 8 <= n; j += 8) {
      __m256 wv[4];
      for (int r = 0; r < 4; ++r) wv[r] = load8(wr[r] + j);
      for (int m = 0; m < M; ++m) {
        __m256 acc = _mm256_loadu_ps(y + m * n + j);
        for (int r = 0; r < 4; ++r) acc = _mm256_fmadd_ps(xb[m][r], wv[r], acc);
        _mm256_storeu_ps(y + m * n + j, acc);
      }
    }
    for (; j < n; ++j)
      for (int m = 0; m < M; ++m) {
        float acc = y[m * n + j];
        for (int r = 0; r < 4; ++r) acc += xs[m][r] * value(wr[r][j]);
        y[m * n + j] = acc;
      }
  }
}

// f(std::integral_constant<int, M>{}) for the m = 1-4 rows of x.
template <class F>
void with_rows(i64 m, F&& f) {
  switch (m) {
    case 1:
      return f(std::integral_constant<int, 1>{});
    case 2:
      return f(std::integral_constant<int, 2>{});
    case 3:
      return f(std::integral_constant<int, 3>{});
    default:
      return f(std::integral_constant<int, 4>{});
  }
}

// An activation the planner folded into the matmul, on one f32 value (in float: the
// epilogue runs once per output, and double's exp cost a sixth of a 4864 x 896 product).
float activate(OpId act, float x) {
  switch (act) {
    case OpId::relu:
      return x > 0.f ? x : 0.f;
    case OpId::gelu:
      return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
    case OpId::gelu_tanh:
      return 0.5f * x * (1.f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case OpId::silu:
      return x / (1.f + std::exp(-x));
    case OpId::sigmoid:
      return 1.f / (1.f + std::exp(-x));
    default:
      return std::tanh(x);
  }
}

class MatvecKernel final : public Kernel {
 public:
  MatvecKernel(const TensorView& a, const TensorView& b, const TensorView& c,
               std::vector<PostOp> post, bool k_rows, bool avx2, std::string what)
      : a_(a),
        b_(b),
        c_(c),
        post_(std::move(post)),
        k_rows_(k_rows),
        bf16_(a.dtype == DType::bf16),
        avx2_(avx2),
        what_(std::move(what)) {}

  std::string describe() const override { return what_; }

  void run() override {
    const i64 m = a_.dims[0], k = a_.dims[1], n = c_.dims[1];
    if (avx2_) widen_x(m, k);
    if (k_rows_) return run_k_rows(m, k, n);
    const i64 blocks = (n + kRows - 1) / kRows;
#pragma omp parallel for schedule(static)
    for (i64 blk = 0; blk < blocks; ++blk) {
      const i64 n0 = blk * kRows, rows = std::min<i64>(kRows, n - n0);
      float* c = c_.as<float>() + n0;
      with_rows(m, [&](auto mm) {
        for (i64 r = 0; r < rows; ++r) row<decltype(mm)::value>(n0 + r, k, c + r);
      });
      epilogue(m, n0, rows);
    }
  }

 private:
  static constexpr i64 kRows = 64;  // weight rows per parallel block

  // The AVX2 loops read x in f32: bf16 rows widened into x32_ (exactly), f32 rows as they are.
  void widen_x(i64 m, i64 k) {
    if (!bf16_) {
      x_ = a_.as<const float>();
      ldx_ = a_.strides[0];
      return;
    }
    if (x32_.size() < static_cast<std::size_t>(m * k)) x32_.resize(static_cast<std::size_t>(m * k));
    for (i64 i = 0; i < m; ++i)
      for (i64 j = 0; j < k; ++j)
        x32_[i * k + j] = bf16_value(a_.as<const u16>()[i * a_.strides[0] + j]);
    x_ = x32_.data();
    ldx_ = k;
  }

  // c[m * ldc] = x_m . (weight row r) for the M rows of x, on the chosen instructions.
  template <int M>
  void row(i64 r, i64 k, float* c) const {
    const i64 off = r * b_.strides[1], ldc = c_.strides[0];
    if (avx2_ && bf16_)
      row_avx2<M>(x_, ldx_, b_.as<const u16>() + off, k, c, ldc);
    else if (avx2_)
      row_avx2<M>(x_, ldx_, b_.as<const float>() + off, k, c, ldc);
    else if (bf16_)
      row_bf16<M>(a_.as<const u16>(), a_.strides[0], b_.as<const u16>() + off, k, c, ldc);
    else
      row_f32<M>(a_.as<const float>(), a_.strides[0], b_.as<const float>() + off, k, c, ldc);
  }

  // y_m += x_mk W_k over weight rows k0 .. k1 - 1 of a [K, N] weight.
  template <int M>
  void axpy(i64 k0, i64 k1, i64 n, float* y) const {
    const i64 ldw = b_.strides[0];
    if (avx2_ && bf16_)
      axpy_avx2<M>(x_, ldx_, b_.as<const u16>(), ldw, k0, k1, n, y);
    else if (avx2_)
      axpy_avx2<M>(x_, ldx_, b_.as<const float>(), ldw, k0, k1, n, y);
    else if (bf16_)
      axpy_bf16<M>(a_.as<const u16>(), a_.strides[0], b_.as<const u16>(), ldw, k0, k1, n, y);
    else
      axpy_f32<M>(a_.as<const float>(), a_.strides[0], b_.as<const float>(), ldw, k0, k1, n, y);
  }

  // A [K, N] weight: thread t of T takes weight rows [t K / T, (t + 1) K / T) into its own
  // partial sums, then each thread adds the T partial sums (in thread order, so the result
  // does not depend on timing) for its share of the columns and runs the epilogue there.
  void run_k_rows(i64 m, i64 k, i64 n) {
    const int threads = std::max(1, omp_get_max_threads());
    const std::size_t need = static_cast<std::size_t>(threads * m * n);
    if (partial_.size() < need) partial_.resize(need);
    float* partial = partial_.data();
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), used = omp_get_num_threads();
      const i64 k0 = k * t / used, k1 = k * (t + 1) / used;
      float* y = partial + static_cast<i64>(t) * m * n;
      std::fill(y, y + m * n, 0.f);
      if (k1 > k0) with_rows(m, [&](auto mm) { axpy<decltype(mm)::value>(k0, k1, n, y); });
#pragma omp barrier
      const i64 j0 = n * t / used, j1 = n * (t + 1) / used;
      for (i64 i = 0; i < m; ++i) {
        float* c = c_.as<float>() + i * c_.strides[0];
        for (i64 j = j0; j < j1; ++j) {
          float sum = 0.f;
          for (int u = 0; u < used; ++u) sum += partial[(static_cast<i64>(u) * m + i) * n + j];
          c[j] = sum;
        }
      }
      if (j1 > j0) epilogue(m, j0, j1 - j0);
    }
  }

  // The folded consumers, in the planner's order, on outputs n0 .. n0 + rows - 1 of each row.
  void epilogue(i64 m, i64 n0, i64 rows) const {
    if (post_.empty()) return;
    for (i64 i = 0; i < m; ++i) {
      float* c = c_.as<float>() + i * c_.strides[0] + n0;
      for (const PostOp& po : post_) {
        if (po.kind == PostOp::Kind::bias) {
          const float* b = po.bias.as<const float>() + n0;
          for (i64 j = 0; j < rows; ++j) c[j] += b[j];
        } else if (po.kind == PostOp::Kind::scale) {
          for (i64 j = 0; j < rows; ++j) c[j] *= po.scale;
        } else {
          for (i64 j = 0; j < rows; ++j) c[j] = activate(po.act, c[j]);
        }
      }
    }
  }

  TensorView a_, b_, c_;
  std::vector<PostOp> post_;
  bool k_rows_;                 // the weight is [K, N] rows, not [N, K]
  bool bf16_;                   // bf16 operands (else f32)
  bool avx2_;                   // the 8-lane AVX2 loops (else AVX-512)
  std::vector<float> partial_;  // per thread: M x N partial sums (k_rows_)
  std::vector<float> x32_;      // AVX2 on bf16 operands: the rows of x widened to f32
  const float* x_ = nullptr;    // AVX2: the rows of x in f32, ldx_ apart
  i64 ldx_ = 0;
  std::string what_;
};

bool cpu_has_avx512() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }();
  return has;
}

bool cpu_has_avx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

// STAG_OWN_MATVEC in the environment: unset or 1, the widest instructions the CPU has; 0,
// oneDNN's kernel (to compare the two); avx2, the AVX2 loops even where AVX-512 is there (to
// test and time them on such a host). Read at each plan, so a test can switch it.
enum class Choice { best, off, avx2 };
Choice requested_path() {
  const char* e = std::getenv("STAG_OWN_MATVEC");
  if (e == nullptr || std::string_view(e) == "1") return Choice::best;
  if (std::string_view(e) == "0") return Choice::off;
  if (std::string_view(e) == "avx2") return Choice::avx2;
  throw std::invalid_argument("STAG_OWN_MATVEC is \"" + std::string(e) +
                              "\"; it takes 0 (oneDNN's kernel), 1 (the default) or avx2");
}

}  // namespace

// a [M, K] (rows contiguous), b [K, N] read from an [N, K] weight (b's strides {1, ldb}), c
// [M, N] f32 contiguous, after matmul's collapse of leading dims; nullptr where another kernel
// is better or the CPU lacks the instructions.
std::unique_ptr<Kernel> matvec_kernel(const TensorView& a, const TensorView& b, const TensorView& c,
                                      const std::vector<PostOp>& post, const std::string& folded) {
  if (a.rank != 2 || b.rank != 2 || c.rank != 2 || c.dtype != DType::f32) return nullptr;
  const std::int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  // Few rows, and a weight large enough (256 KiB and up in f32) that reading it dominates.
  if (m < 1 || m > 4 || k < 1 || n < 1 || k * n < (std::int64_t{1} << 16)) return nullptr;
  if (a.strides[1] != 1 || !c.contiguous()) return nullptr;
  // The weight's rows: [N, K] (read transposed, matmul_nt: b's strides {1, >= K}) or [K, N]
  // (b's strides {>= N, 1}).
  const bool n_rows = b.strides[0] == 1 && b.strides[1] >= k;
  const bool k_rows = !n_rows && b.strides[1] == 1 && b.strides[0] >= n;
  if (!n_rows && !k_rows) return nullptr;
  const bool bf16 = a.dtype == DType::bf16 && b.dtype == DType::bf16;
  const bool f32 = a.dtype == DType::f32 && b.dtype == DType::f32;
  if (!bf16 && !f32) return nullptr;
  const Choice choice = requested_path();
  if (choice == Choice::off) return nullptr;
  // AVX-512 (with AVX512-BF16 for bf16 operands) where the CPU has it, else AVX2 + FMA.
  const bool wide = choice == Choice::best && (bf16 ? attn::cpu_has_bf16_dot() : cpu_has_avx512());
  if (!wide && !cpu_has_avx2()) return nullptr;
  for (const PostOp& po : post)
    if (po.kind == PostOp::Kind::bias &&
        (po.bias.dtype != DType::f32 || po.bias.numel() != n || !po.bias.contiguous()))
      return nullptr;
  std::string how = !wide  ? (bf16 ? "bf16 widened, avx2 fma" : "avx2 fma")
                    : bf16 ? (k_rows ? "bf16 widened, avx512 fma" : "avx512_bf16 dot products")
                           : "avx512 fma";
  if (k_rows) how += ", [K, N] weight";
  return std::make_unique<MatvecKernel>(a, b, c, post, k_rows, !wide,
                                        "own matvec (" + how + ")" + folded);
}

}  // namespace stag

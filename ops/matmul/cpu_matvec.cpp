// A matmul of a few rows by a large weight stored as [N, K] rows (a linear layer's or a tied
// output layer's weight, read through matmul_nt): the decode step of a language model at batch
// 1-4. Such a product reads every weight once and does 2 M flops per weight element, so its
// speed is the memory's. oneDNN 2.6's brgemm read these weights at 12-13 GB/s on a 2-core AMD
// EPYC whose plain loads reach 28 GB/s (docs/pretrained.md); this kernel streams each weight
// row once, in order, and dots it with the M input rows held in L1:
//   bf16 operands: vdpbf16ps (AVX512-BF16), 32 products per instruction, f32 sums;
//   f32 operands: AVX-512 FMA, 16 per instruction.
// The folded consumers (bias, scale, activation) run on each finished output in f32. Each
// output is one f32 dot product (partial sums in 16 lanes, then added), so results differ from
// oneDNN's in the order of the sums only. Chosen where the CPU has the instructions; elsewhere
// the oneDNN kernel runs as before.
#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
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

class MatvecKernel final : public CpuKernel {
 public:
  MatvecKernel(const TensorView& a, const TensorView& b, const TensorView& c,
               std::vector<PostOp> post, std::string what)
      : a_(a), b_(b), c_(c), post_(std::move(post)), what_(std::move(what)) {}

  std::string describe() const override { return what_; }

  void run() override {
    const i64 m = a_.dims[0], k = a_.dims[1], n = c_.dims[1];
    const i64 blocks = (n + kRows - 1) / kRows;
#pragma omp parallel for schedule(static)
    for (i64 blk = 0; blk < blocks; ++blk) {
      const i64 n0 = blk * kRows, rows = std::min<i64>(kRows, n - n0);
      if (a_.dtype == DType::bf16)
        dispatch<u16>(m, rows, a_.as<const u16>(), b_.as<const u16>() + n0 * b_.strides[1], k, n0);
      else
        dispatch<float>(m, rows, a_.as<const float>(), b_.as<const float>() + n0 * b_.strides[1], k,
                        n0);
      epilogue(m, n0, rows);
    }
  }

 private:
  static constexpr i64 kRows = 64;  // weight rows per parallel block

  template <class T>
  void dispatch(i64 m, i64 rows, const T* x, const T* w, i64 k, i64 n0) {
    float* c = c_.as<float>() + n0;
    const i64 ldx = a_.strides[0], ldw = b_.strides[1], ldc = c_.strides[0];
    switch (m) {
      case 1:
        return block<T, 1>(x, ldx, w, ldw, k, rows, c, ldc);
      case 2:
        return block<T, 2>(x, ldx, w, ldw, k, rows, c, ldc);
      case 3:
        return block<T, 3>(x, ldx, w, ldw, k, rows, c, ldc);
      default:
        return block<T, 4>(x, ldx, w, ldw, k, rows, c, ldc);
    }
  }

  template <class T, int M>
  static void block(const T* x, i64 ldx, const T* w, i64 ldw, i64 k, i64 rows, float* c, i64 ldc) {
    for (i64 r = 0; r < rows; ++r) {
      if constexpr (std::is_same_v<T, u16>)
        row_bf16<M>(x, ldx, w + r * ldw, k, c + r, ldc);
      else
        row_f32<M>(x, ldx, w + r * ldw, k, c + r, ldc);
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

}  // namespace

// a [M, K] (rows contiguous), b [K, N] read from an [N, K] weight (b's strides {1, ldb}), c
// [M, N] f32 contiguous, after matmul's collapse of leading dims; nullptr where another kernel
// is better or the CPU lacks the instructions.
std::unique_ptr<CpuKernel> matvec_kernel(const TensorView& a, const TensorView& b,
                                         const TensorView& c, const std::vector<PostOp>& post,
                                         const std::string& folded) {
  if (a.rank != 2 || b.rank != 2 || c.rank != 2 || c.dtype != DType::f32) return nullptr;
  const std::int64_t m = a.dims[0], k = a.dims[1], n = b.dims[1];
  // Few rows, and a weight large enough (256 KiB and up in f32) that reading it dominates.
  if (m < 1 || m > 4 || k < 1 || n < 1 || k * n < (std::int64_t{1} << 16)) return nullptr;
  if (a.strides[1] != 1 || b.strides[0] != 1 || b.strides[1] < k || !c.contiguous()) return nullptr;
  const bool bf16 = a.dtype == DType::bf16 && b.dtype == DType::bf16;
  const bool f32 = a.dtype == DType::f32 && b.dtype == DType::f32;
  if (!(bf16 && attn::cpu_has_bf16_dot()) && !(f32 && cpu_has_avx512())) return nullptr;
  // STAG_OWN_MATVEC=0 in the environment keeps oneDNN's kernel (to compare the two).
  static const bool enabled = [] {
    const char* e = std::getenv("STAG_OWN_MATVEC");
    return e == nullptr || std::string_view(e) != "0";
  }();
  if (!enabled) return nullptr;
  for (const PostOp& po : post)
    if (po.kind == PostOp::Kind::bias &&
        (po.bias.dtype != DType::f32 || po.bias.numel() != n || !po.bias.contiguous()))
      return nullptr;
  return std::make_unique<MatvecKernel>(a, b, c, post,
                                        std::string("own matvec (") +
                                            (bf16 ? "avx512_bf16 dot products" : "avx512 fma") +
                                            ")" + folded);
}

}  // namespace stag

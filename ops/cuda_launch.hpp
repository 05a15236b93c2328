// The CUDA backend's launch interface: plain functions, defined next to each op in
// ops/<op>/cuda.cu, that enqueue one op's kernels on a stream. This header is all that nvcc and
// the host side share: it includes no graph header, so nvcc never parses the constexpr graph
// code. The host side (runtime/cuda/kernels.cpp) checks every argument before it calls one of
// these (runtime/cuda/launch_checks.hpp); the functions trust what they are given.
#pragma once

#include <cstddef>
#include <cstdint>

// The namespace of the launch functions: stag::cuda, or stag::cuda_interpret when the kernels
// are built by the host compiler in interpret mode (ops/cuda_interpret.hpp), so that both builds
// can be linked into one program.
#if defined(STAG_CUDA_INTERPRET)
#define STAG_CUDA_NAMESPACE cuda_interpret
#else
#define STAG_CUDA_NAMESPACE cuda
#endif

namespace stag::STAG_CUDA_NAMESPACE {

inline constexpr int kRank = 6;  // = stag::kMaxRank (static_assert in runtime/cuda/kernels.cpp)

// Element types, numbered as stag::DType.
enum class Dt : std::uint8_t { f32, f64, bf16, i32, i64, boolean };

// A device tensor: dims and strides in elements (a stride of 0 broadcasts).
struct Tensor {
  void* data = nullptr;
  Dt dtype = Dt::f32;
  int rank = 0;
  std::int64_t dims[kRank] = {};
  std::int64_t strides[kRank] = {};
};

// What every launch gets: the stream (a cudaStream_t) and the plan's device word where a kernel
// that finds a bad input (an id outside its table) records (tag << 40) | flat position, the
// smallest winning, so that the host can name the node and the position after the step as the
// CPU does (runtime/cuda/backend.cpp). The optimizer kernels skip their update when the word is
// set: a step with a bad input changes no parameter.
// `rng` is the plan's device copy of the step's {seed, step} (RunState), written before each
// step: kernels that draw random numbers read it on the device, never take it by value, so that
// a step captured as a CUDA Graph and replayed draws each step's own masks.
struct Launch {
  void* stream = nullptr;
  unsigned long long* bad = nullptr;  // ~0: nothing bad seen
  unsigned long long tag = 0;         // this node's number in the plan
  const std::uint64_t* rng = nullptr;
};
inline constexpr int kBadPositionBits = 40;

// Run-time scalars an op reads from device memory (optimizer inputs): pointers to one f32 each.
struct Scalars {
  const float* p[4] = {};
};

// ---- elementwise (ops/unary, binary, compare, logical, where, masked_fill, cast, ...) --------
// Every input is read broadcast to `out`'s dims through its strides; out is contiguous.
// `op` is the stag::OpId value; p and q the op's attrs f[0] and f[1].
void unary(const Launch&, int op, double p, double q, const Tensor& x, const Tensor& out);
void unary_backward(const Launch&, int fwd_op, double p, double q, const Tensor& x, const Tensor& y,
                    const Tensor& g, const Tensor& out);
void binary(const Launch&, int op, const Tensor& a, const Tensor& b, const Tensor& out);
void compare(const Launch&, int op, const Tensor& a, const Tensor& b, const Tensor& out);
void logical(const Launch&, int op, const Tensor& a, const Tensor& b, const Tensor& out);
void where(const Launch&, const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& out);
void masked_fill(const Launch&, const Tensor& x, const Tensor& mask, double value,
                 const Tensor& out);
// Rounds each element once to out's dtype (cast); also the strided copy behind permute,
// expand, slice, concat and stop_gradient when the dtypes agree.
void convert(const Launch&, const Tensor& x, const Tensor& out);
void fill(const Launch&, double value, const Tensor& out);        // constant
void iota(const Launch&, std::int64_t start, const Tensor& out);  // positions
void causal_mask(const Launch&, const Tensor& out);               // [Sq, Sk] bool
void padding_mask(const Launch&, const Tensor& lengths, const Tensor& out);
// The mask of the step's seed and step (Launch::rng).
void dropout(const Launch&, double p, std::uint64_t salt, std::uint64_t index_offset,
             const Tensor& x, const Tensor& out);

// ---- rows (ops/softmax, layer_norm, rms_norm, cross_entropy, embedding, reduce) -------------
void softmax(const Launch&, bool log, int axis, const Tensor& x, const Tensor* mask,
             const Tensor& out);
void softmax_backward(const Launch&, bool log, int axis, const Tensor& y, const Tensor& g,
                      const Tensor& out);
// n: the length of one normalised row (the product of the last normalised dims).
void layer_norm(const Launch&, std::int64_t n, double eps, const Tensor& x, const Tensor* w,
                const Tensor* b, const Tensor& out);
void layer_norm_backward(const Launch&, std::int64_t n, double eps, const Tensor& x,
                         const Tensor* w, const Tensor& g, const Tensor& out);
void rms_norm(const Launch&, std::int64_t n, double eps, const Tensor& x, const Tensor* w,
              const Tensor& out);
void rms_norm_backward(const Launch&, std::int64_t n, double eps, const Tensor& x, const Tensor* w,
                       const Tensor& g, const Tensor& out);
// fold: 0 sum, 1 mean, 2 max; mask: bit d set = dim d of x is reduced.
void reduce(const Launch&, int fold, std::uint32_t mask, const Tensor& x, const Tensor& out);
// A label outside [0, classes) that is not ignore_index records its position in Launch::bad.
// Scratch: cross_entropy_workspace(rows) bytes of device memory (per-row sums, kept in order
// so the mean is summed in one fixed order: deterministic).
std::size_t cross_entropy_workspace(std::int64_t rows);
void cross_entropy(const Launch&, std::int64_t ignore, double smoothing, const Tensor& logits,
                   const Tensor& labels, const Tensor& out, void* workspace);
void cross_entropy_backward(const Launch&, std::int64_t ignore, double smoothing,
                            const Tensor& logits, const Tensor& labels, const Tensor& g,
                            const Tensor& out, void* workspace);
void mse_loss(const Launch&, const Tensor& pred, const Tensor& target, const Tensor& out);
// An id outside the table records its position in Launch::bad (the row is then zeros).
void embedding(const Launch&, const Tensor& ids, const Tensor& table, const Tensor& out);
// Deterministic scatter-add: the (id, position) pairs are sorted stably (CUB radix sort), then
// one thread per (id, column) sums that id's gradient rows in position order, in double.
std::size_t embedding_backward_workspace(std::int64_t positions);
void embedding_backward(const Launch&, const Tensor& ids, const Tensor& g, const Tensor& out,
                        void* workspace, std::size_t workspace_bytes);

// ---- scans (ops/argmax, ops/cumsum): dense x, one thread per line along `axis` -------------
// argmax of f32, f64, i32 or i64 into i32: the first index on ties, a NaN wins (as the CPU).
void argmax(const Launch&, int axis, const Tensor& x, const Tensor& out);
// cumsum of f32 or f64 (from the end with `reverse`), summed in x's dtype in the line's order.
void cumsum(const Launch&, int axis, bool reverse, const Tensor& x, const Tensor& out);

// ---- the fused attention (ops/attention) ------------------------------------------------------
// q [B, Hq, Sq, Dk], k [B, Hkv, Sk, Dk], v [B, Hkv, Sk, Dv] (and do [B, Hq, Sq, Dv]) dense, in
// element type qt (f32, f64 or bf16; do in gt); out f32 or f64. Attrs as the op's
// (ops/attention/attention.hpp); keep strides broadcast the mask over [B, Hq, Sq, Sk]; pos: the
// cache positions [B] (a position outside [-1, Sk - Sq] records its batch row in Launch::bad).
inline constexpr int kMaxHeadDim = 256;
struct AttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;  // do, for the gradients
  Dt qt = Dt::f32, gt = Dt::f32;
  std::int64_t B = 1, Hq = 1, Hkv = 1, Sq = 1, Sk = 1, Dk = 1, Dv = 1;
  int mask_kind = 0, score_kind = 0;  // AttnMask, AttnScore
  std::int64_t window = 0;
  double scale = 1, softcap = 0, drop = 0;  // drop: 0 unless training
  std::uint64_t salt = 0, index_offset = 0;
  const std::uint64_t* rng = nullptr;  // Launch::rng: {seed, step} on the device
  const bool* keep = nullptr;
  std::int64_t keep_st[4] = {};
  const std::int32_t* pos = nullptr;
};
void attention_forward(const Launch&, const AttentionArgs& a, const Tensor& out);
// The gradients' scratch: per query row, the softmax's max, sum and sum_j p_j dp_j.
std::size_t attention_workspace(const AttentionArgs& a);
void attention_backward_dq(const Launch&, const AttentionArgs& a, const Tensor& out, void* ws);
// dk (dv = false) or dv.
void attention_backward_kv(const Launch&, const AttentionArgs& a, bool dv, const Tensor& out,
                           void* ws);

// ---- the KV cache (ops/cache_write) ----------------------------------------------------------
// rows [.., T, D] written at position p of cache [.., L, D] (in place), p from `pos` (i32 or
// i64): pos[b] for batch row b when per_row (-1: row b is left alone), else pos[0]. A position
// that does not fit records its batch row in Launch::bad, and then nothing is written.
struct CacheWriteArgs {
  const void* pos = nullptr;
  bool pos64 = false, per_row = false;
  std::int64_t batch = 1;  // the cache's first dim (1 for a cache [L, D])
  std::int64_t outer = 1;  // product of the dims before [L, D]
  std::int64_t inner = 1;  // outer / batch: blocks per batch row
  std::int64_t len = 0, t = 0, d = 0;
};
void cache_write(const Launch&, const CacheWriteArgs& a, const Tensor& rows, const Tensor& cache);

// ---- positions (ops/rope) -------------------------------------------------------------------
// Rotates pairs (i, i + Dh/2) of x's rows by (p + offset) * theta^(-2i/Dh), angles in double;
// p = s, or positions[s] ([S] or [B, S], any integer or float dtype) when given.
void rope(const Launch&, double theta, std::int64_t offset, bool inverse, const Tensor& x,
          const Tensor* positions, const Tensor& out);

// ---- optimizers (ops/optim) ------------------------------------------------------------------
// Scalars are device pointers: sgd {lr, gscale}, adam {lr, t, gscale}; hp: the optional
// settings input (nullptr: the attrs). attr_f / attr_i: the node's attrs (copied by value).
struct OptimAttrs {
  double f[4] = {};
  std::int64_t i[2] = {};
};
// Both skip the update when gscale is not finite or Launch::bad is set.
void sgd_update(const Launch&, const OptimAttrs&, const Tensor& p, const Tensor& g,
                const Tensor& buf, const float* lr, const float* gscale, const float* hp,
                const Tensor& out);
void adam_update(const Launch&, const OptimAttrs&, const Tensor& p, const Tensor& g,
                 const Tensor& m, const Tensor& v, const float* lr, const float* t,
                 const float* gscale, const float* hp, const Tensor& out);

}  // namespace stag::STAG_CUDA_NAMESPACE

// Device helpers shared by the ops' CUDA kernels (ops/<op>/cuda.cu): grid sizing, strided
// index math, loads and stores of any dtype, block reductions. Included only by .cu files.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(STAG_CUDA_INTERPRET)
#include <stag/ops/cuda_interpret.hpp>  // the host compiler, emulating what follows
#else
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#endif

#include <stag/ops/cuda_launch.hpp>

// STAG_LAUNCH(kernel, grid, block, shared_bytes, stream)(args...) is
// kernel<<<grid, block, shared_bytes, stream>>>(args...), written so that the host compiler
// can run it in interpret mode (ops/cuda_interpret.hpp).
#if defined(STAG_CUDA_INTERPRET)
#define STAG_LAUNCH(kernel, grid, block, shared, stream) \
  ::stag::cuda_interpret::emu::Launcher(#kernel, grid, block, shared, stream).bind(kernel)
#else
#define STAG_LAUNCH(kernel, grid, block, shared, stream) kernel<<<grid, block, shared, stream>>>
#endif

// Shared memory, written so that the interpret mode can check every access for races, bounds and
// reads of unwritten elements (ops/cuda_interpret.hpp), where a plain __shared__ does not compile:
//   STAG_SHARED(double, part, 32);         // __shared__ double part[32]
//   STAG_SHARED(float, tile, 32, 33);      // __shared__ float tile[32][33]
//   STAG_DYNAMIC_SHARED(float, buf);       // the launch's dynamic shared bytes as float buf[]
// Use them as arrays: `part[i]` (not pointers into them).
#if defined(STAG_CUDA_INTERPRET)
#define STAG_SHARED(T, name, ...)                                        \
  static ::stag::cuda_interpret::emu::SharedArray<T, __VA_ARGS__> name { \
#name                                                                \
  }
#define STAG_DYNAMIC_SHARED(T, name)                          \
  static ::stag::cuda_interpret::emu::DynamicShared<T> name { \
#name                                                     \
  }
#else
namespace stag::cuda_detail {
template <class T, std::size_t N, std::size_t... Ns>
struct ArrayOf {
  using type = typename ArrayOf<T, Ns...>::type[N];
};
template <class T, std::size_t N>
struct ArrayOf<T, N> {
  using type = T[N];
};
}  // namespace stag::cuda_detail
#define STAG_SHARED(T, name, ...) \
  __shared__ typename ::stag::cuda_detail::ArrayOf<T, __VA_ARGS__>::type name
#define STAG_DYNAMIC_SHARED(T, name)                                    \
  extern __shared__ __align__(16) unsigned char stag_dynamic_shared_[]; \
  T* const name = reinterpret_cast<T*>(stag_dynamic_shared_)
#endif

namespace stag::STAG_CUDA_NAMESPACE {

inline cudaStream_t stream_of(const Launch& l) {
  return static_cast<cudaStream_t>(l.stream);
}

inline constexpr int kThreads = 256;

// A grid-stride loop covers any n with at most this many blocks.
inline unsigned blocks_for(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// Offsets into up to N tensors read broadcast to `out`'s dims, for a flat output index. Strides
// are copied into a by-value struct, so kernels take it as a parameter.
template <int N>
struct Index {
  int rank = 0;
  std::int64_t dims[kRank] = {};
  std::int64_t st[N][kRank] = {};

  __device__ void offsets(std::int64_t flat, std::int64_t (&off)[N]) const {
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t i = flat % dims[d];
      flat /= dims[d];
      for (int k = 0; k < N; ++k) off[k] += i * st[k][d];
    }
  }
};

// Strides reading `v` as broadcast to out's dims (0 where v has no such dim or size 1).
template <int N>
Index<N> index_for(const Tensor& out, const Tensor* const (&ins)[N]) {
  Index<N> ix;
  ix.rank = out.rank;
  for (int d = 0; d < out.rank; ++d) ix.dims[d] = out.dims[d];
  for (int k = 0; k < N; ++k)
    for (int d = 0; d < out.rank; ++d) {
      const int iv = ins[k]->rank - out.rank + d;
      ix.st[k][d] = (iv < 0 || ins[k]->dims[iv] != out.dims[d]) ? 0 : ins[k]->strides[iv];
    }
  return ix;
}

inline std::int64_t numel(const Tensor& t) {
  std::int64_t n = 1;
  for (int d = 0; d < t.rank; ++d) n *= t.dims[d];
  return n;
}

// Any dtype read as double, and written from double rounding once (as kernel::store: integers
// truncate and saturate, NaN becomes 0; bf16 rounds to nearest even).
__device__ inline double load(const void* p, Dt t, std::int64_t off) {
  switch (t) {
    case Dt::f32:
      return static_cast<const float*>(p)[off];
    case Dt::f64:
      return static_cast<const double*>(p)[off];
    case Dt::i32:
      return static_cast<const std::int32_t*>(p)[off];
    case Dt::i64:
      return static_cast<double>(static_cast<const std::int64_t*>(p)[off]);
    case Dt::boolean:
      return static_cast<const bool*>(p)[off] ? 1.0 : 0.0;
    case Dt::bf16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[off]);
  }
  return 0;
}

__device__ inline void store(void* p, Dt t, std::int64_t off, double x) {
  switch (t) {
    case Dt::f32:
      static_cast<float*>(p)[off] = static_cast<float>(x);
      return;
    case Dt::f64:
      static_cast<double*>(p)[off] = x;
      return;
    case Dt::i32:
      static_cast<std::int32_t*>(p)[off] = x != x              ? 0
                                           : x >= 2147483648.0 ? INT32_MAX
                                           : x < -2147483648.0 ? INT32_MIN
                                                               : static_cast<std::int32_t>(x);
      return;
    case Dt::i64: {
      std::int64_t v = 0;
      if (x == x)
        v = x >= 9223372036854775808.0   ? INT64_MAX
            : x < -9223372036854775808.0 ? INT64_MIN
                                         : static_cast<std::int64_t>(x);
      static_cast<std::int64_t*>(p)[off] = v;
      return;
    }
    case Dt::boolean:
      static_cast<bool*>(p)[off] = x != 0;
      return;
    case Dt::bf16:
      // NOTE: double -> bf16 in one rounding (__double2bfloat16 rounds to nearest even).
      static_cast<__nv_bfloat16*>(p)[off] = __double2bfloat16(x);
      return;
  }
}

// Sum over the block of one double per thread (every thread gets the total). blockDim.x must be
// a multiple of 32 and at most 1024.
__device__ inline double block_sum(double v) {
  STAG_SHARED(double, warp_part, 32);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // warp_part may still be read by a previous call
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? warp_part[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline double block_max(double v) {
  STAG_SHARED(double, warp_part, 32);
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? warp_part[lane] : -INFINITY;
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Where a kernel records a bad input: the plan's word and this node's tag (Launch).
struct Bad {
  unsigned long long* word = nullptr;
  unsigned long long tag = 0;
};
inline Bad bad_of(const Launch& l) {
  return {l.bad, l.tag};
}
// Records a bad input position (the smallest tag, then position, wins).
__device__ inline void report_bad(Bad b, std::int64_t position) {
  if (b.word != nullptr)
    atomicMin(b.word, (b.tag << kBadPositionBits) | static_cast<unsigned long long>(position));
}
__device__ inline bool any_bad(Bad b) {
  return b.word != nullptr && *b.word != ~0ull;
}

}  // namespace stag::STAG_CUDA_NAMESPACE

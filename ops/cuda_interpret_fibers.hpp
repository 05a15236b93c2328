// The CUDA interpret mode (ops/cuda_interpret.hpp), part 1: the toolkit's names and types for
// the host compiler, and the fibers that run a block's threads (the launch's state, switching at
// barriers and warp operations, the warp operations themselves).
#pragma once

#include <math.h>  // NOTE: the C names (exp, fmax, isfinite, INFINITY) as device code calls them
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <stag/ops/kernel.hpp>  // to_bf16: the CPU's rounding, one rounding from double

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// NOTE: shared memory is declared with STAG_SHARED / STAG_DYNAMIC_SHARED (ops/cuda_common.cuh),
// which the emulation checks; a plain __shared__ would escape the checks, so it is an error.
#define __shared__ __shared___is_not_checked_in_interpret_mode_use_STAG_SHARED
#define __restrict__ __restrict

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorStreamCaptureUnsupported = 900,
  cudaErrorStreamCaptureInvalidated = 901,
};
// A stream; while it captures, what is enqueued on it is recorded instead of run (a CUDA Graph),
// and what a capture cannot hold (a synchronisation, a copy between host and device, an
// allocation) makes the capture invalid, as on a GPU.
struct CUstream_st {
  std::vector<std::function<void()>>* capture = nullptr;
  std::string invalid;  // why the capture under way is invalid ("" while it is valid)
};
using cudaStream_t = CUstream_st*;
struct CUgraph_st {
  std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
  std::vector<std::function<void()>> ops;
};
using cudaGraph_t = CUgraph_st*;
using cudaGraphExec_t = CUgraphExec_st*;
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2,
};

// bf16 as the toolkit's __nv_bfloat16: the bits, converted as the CPU kernels convert them.
struct __nv_bfloat16 {
  std::uint16_t bits = 0;
};
inline float __bfloat162float(__nv_bfloat16 b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __double2bfloat16(double x) {
  return {stag::kernel::to_bf16(static_cast<long double>(x))};
}
inline __nv_bfloat16 __float2bfloat16(float x) {
  return {stag::kernel::float_to_bf16(x)};
}

namespace stag::cuda_interpret::emu {

// An error the emulation found (a barrier not reached by every thread, a race, a bad launch).
struct KernelError : stag::Error {
  using stag::Error::Error;
};

// Where a fiber is: running (ready), waiting at a barrier, returned, or stopped at an error.
enum class At : std::uint8_t { ready, block_barrier, warp_op, done, failed };

// A warp operation a lane waits at: its kind, mask and operands, and (once the warp's lanes of
// the mask have all arrived) its result.
enum class WarpKind : std::uint8_t { shuffle, ballot, any, all, sync };
struct WarpOp {
  WarpKind kind = WarpKind::sync;
  unsigned mask = 0;
  std::uint64_t value = 0;  // the shuffled value's bytes, or the vote's predicate
  int src = 0;              // the source lane a shuffle asks for (computed by the caller)
  std::uint64_t result = 0;
};

struct Fiber {
  ucontext_t ctx{};
  dim3 idx;
  int linear = 0;
  At at = At::ready;
  WarpOp op;
};

// A __syncwarp that completed: the lanes it ordered, numbered per warp since the last barrier.
struct WarpSync {
  unsigned mask = 0;
};

// The running launch: its geometry, the fibers of the block being run, the checks' clocks.
struct State {
  dim3 grid, block, block_idx;
  const char* kernel = "";
  std::vector<Fiber> fibers;
  Fiber* current = nullptr;
  ucontext_t scheduler{};
  std::function<void()> body;
  char* stacks = nullptr;
  std::size_t stack_bytes = 0, stacks_mapped = 0;
  // Shared memory's clocks: `block_serial` changes with every block run (a new block's shared
  // memory is unwritten), `epoch` with every block and every __syncthreads (what came before is
  // ordered). The __syncwarps of each warp since the last epoch change, in order.
  std::uint64_t block_serial = 0, epoch = 0;
  std::vector<std::vector<WarpSync>> warp_syncs;
  // Dynamic shared memory: the launch's bytes (poisoned and unwritten at each block's start).
  std::vector<unsigned char> dynamic;
  std::size_t dynamic_bytes = 0;
  std::string error;                 // what a fiber stopped at (At::failed)
  cudaStream_t capturing = nullptr;  // the stream recording a CUDA Graph, if any
};
inline State& state() {
  static State s;
  return s;
}
inline std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}
inline constexpr std::size_t kStack = 256 * 1024;  // per thread; mapped lazily (MAP_NORESERVE)

inline Fiber& self() {
  return *state().current;
}
// Back to the scheduler; returns when this fiber runs again.
inline void yield(At at) {
  State& s = state();
  Fiber& f = self();
  f.at = at;
  swapcontext(&f.ctx, &s.scheduler);
}

inline std::string str(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}
inline std::string where(const Fiber& f) {
  return "block " + str(state().block_idx) + " thread " + str(f.idx);
}
inline std::string thread_name(int linear) {
  return "thread " + str(state().fibers[static_cast<std::size_t>(linear)].idx);
}
inline std::string prefix() {
  return std::string("stag: cuda interpret: kernel ") + state().kernel + ": ";
}

// Stops the running fiber at an error: the scheduler throws it as a KernelError. (An exception
// cannot unwind out of a fiber; the fiber is dropped, it never runs again.)
[[noreturn]] inline void fail_here(const std::string& what) {
  state().error = prefix() + what;
  yield(At::failed);
  std::abort();  // not reached: a failed fiber is not resumed
}

inline void syncthreads() {
  yield(At::block_barrier);
}

// A warp operation: waits until every lane of `mask` has reached one, then returns its result.
inline std::uint64_t warp_op(WarpKind kind, unsigned mask, std::uint64_t value, int src) {
  Fiber& f = self();
  f.op = WarpOp{kind, mask, value, src, 0};
  yield(At::warp_op);
  return f.op.result;
}

// The source lane of a shuffle; `lane` itself where the source lies outside its segment.
inline int shuffle_source(int lane, int wanted, int width,
                          int kind /*0 idx, 1 up, 2 down, 3 xor*/) {
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0)
    fail_here(where(self()) + ": a shuffle's width must be a power of two up to 32, not " +
              std::to_string(width));
  const int base = lane & ~(width - 1);
  switch (kind) {
    case 0:
      return base + (wanted & (width - 1));
    case 1:
      return lane - base >= wanted ? lane - wanted : lane;
    case 2:
      return lane - base + wanted < width ? lane + wanted : lane;
    default: {
      const int src = lane ^ wanted;
      return src < base + width ? src : lane;  // a later segment is out of reach
    }
  }
}

template <class T>
T shuffle(unsigned mask, T v, int wanted, int width, int kind) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>,
                "stag: shuffle of a value over 8 bytes");
  const int lane = self().linear % 32;
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_op(WarpKind::shuffle, mask, bits, shuffle_source(lane, wanted, width, kind));
  T r;
  std::memcpy(&r, &bits, sizeof(T));
  return r;
}

}  // namespace stag::cuda_interpret::emu

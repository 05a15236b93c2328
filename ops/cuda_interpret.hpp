// The interpret mode of the CUDA kernels: what ops/<op>/cuda.cu uses from the CUDA toolkit,
// emulated for the host compiler, so that the same device code runs on the CPU and is checked on
// every commit without a GPU (as Triton's TRITON_INTERPRET=1 and Pallas' interpret=True do).
// Included by ops/cuda_common.cuh in place of the toolkit's headers when STAG_CUDA_INTERPRET is
// defined; tests/cuda_interpret/ builds every ops/*/cuda.cu with it (ctest label cuda_interpret).
//
// How a launch runs (STAG_LAUNCH in ops/cuda_common.cuh): the blocks one after another, the
// threads of a block as fibers (ucontext) on the calling thread, switched at __syncthreads and
// at every warp shuffle. So:
// - __syncthreads is a real barrier over the block's threads; one that some thread of the block
//   does not reach (it returned, or waits at a shuffle) is an error naming the block and the
//   thread, not a silent pass (on a GPU it hangs or is undefined).
// - a warp shuffle exchanges the values of the warp's lanes; a lane that returned or waits at a
//   __syncthreads while its warp shuffles is the same error.
// - __shared__ variables are function-local statics: one copy, shared by the block's threads.
//   Launches are serialised (one mutex), so blocks never share it at the same time.
//   NOTE: unlike a GPU, a statically initialised __shared__ array starts at zero and keeps its
//   values from the previous block; a kernel that reads shared memory before writing it is not
//   caught here.
// - atomics are plain read-modify-writes (fibers are never preempted).
// - streams are ignored: a launch has finished when it returns.
// Not emulated: shared-memory races between the barriers, out-of-bounds accesses (run the tests
// under ASan for those), dynamic shared memory (no kernel uses it yet), tensor cores.
#pragma once

#include <math.h>  // NOTE: the C names (exp, fmax, isfinite, INFINITY) as device code calls them
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <stag/ops/kernel.hpp>  // to_bf16: the CPU's rounding, one rounding from double

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __restrict__ __restrict

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct CUstream_st;
using cudaStream_t = CUstream_st*;
enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };

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

// An error the emulation found (a barrier not reached by every thread, a bad launch).
struct KernelError : stag::Error {
  using stag::Error::Error;
};

enum class At : std::uint8_t { ready, block_barrier, warp_barrier, done };

struct Fiber {
  ucontext_t ctx{};
  dim3 idx;
  int linear = 0;
  At at = At::ready;
};

// The running launch: its geometry, the fibers of the block being run, the shuffle slots.
struct State {
  dim3 grid, block, block_idx;
  std::vector<Fiber> fibers;
  Fiber* current = nullptr;
  ucontext_t scheduler{};
  std::function<void()> body;
  // Two sets of slots per warp, used in turn, so that a lane can write the next shuffle's value
  // while a slower lane still reads the previous one.
  std::vector<std::uint64_t> slots;  // [warp][2][32]
  std::vector<int> shuffles;         // per fiber: shuffles done (the parity picks the slots)
  char* stacks = nullptr;
  std::size_t stack_bytes = 0, stacks_mapped = 0;
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

inline void syncthreads() {
  yield(At::block_barrier);
}

// The value of `lane`'s `v` in this warp shuffle (every lane of the warp takes part).
template <class T>
T shuffle(T v, int (*partner)(int lane, int arg), int arg) {
  static_assert(sizeof(T) <= sizeof(std::uint64_t), "stag: shuffle of a value over 8 bytes");
  State& s = state();
  Fiber& f = self();
  const int warp = f.linear / 32, lane = f.linear % 32;
  const int parity = s.shuffles[static_cast<std::size_t>(f.linear)]++ & 1;
  std::uint64_t* slot = s.slots.data() + (static_cast<std::size_t>(warp) * 2 + parity) * 32;
  std::memcpy(&slot[lane], &v, sizeof(T));
  yield(At::warp_barrier);
  const int from = partner(lane, arg);
  const int lanes = std::min(32, static_cast<int>(s.fibers.size()) - warp * 32);
  if (from < 0 || from >= lanes) return v;  // as CUDA: an out-of-range source lane gives v
  T r;
  std::memcpy(&r, &slot[from], sizeof(T));
  return r;
}

inline std::string where(const Fiber& f) {
  const dim3 b = state().block_idx;
  return "block (" + std::to_string(b.x) + ", " + std::to_string(b.y) + ", " + std::to_string(b.z) +
         ") thread (" + std::to_string(f.idx.x) + ", " + std::to_string(f.idx.y) + ", " +
         std::to_string(f.idx.z) + ")";
}

inline void trampoline() {
  State& s = state();
  s.body();
  s.current->at = At::done;
  swapcontext(&s.current->ctx, &s.scheduler);
}

// Runs one block to the end: the fibers in turn until each is done, releasing the barriers
// once every thread (of the block, or of the warp) waits at one.
inline void run_block(const char* kernel) {
  State& s = state();
  const int n = static_cast<int>(s.fibers.size());
  for (int t = 0; t < n; ++t) {
    Fiber& f = s.fibers[static_cast<std::size_t>(t)];
    f.at = At::ready;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = s.stacks + static_cast<std::size_t>(t) * kStack;
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, trampoline, 0);
  }
  std::fill(s.shuffles.begin(), s.shuffles.end(), 0);
  auto fail = [&](const Fiber& waiting, const Fiber& other, const char* what) {
    throw KernelError(
        std::string("stag: cuda interpret: kernel ") + kernel + ": " + where(waiting) +
        " waits at " + (waiting.at == At::block_barrier ? "__syncthreads" : "a warp shuffle") +
        " but " + where(other) + " " + what + " (on a GPU this hangs or is undefined)");
  };
  for (;;) {
    bool ran = false;
    for (int t = 0; t < n; ++t) {
      Fiber& f = s.fibers[static_cast<std::size_t>(t)];
      if (f.at != At::ready) continue;
      s.current = &f;
      swapcontext(&s.scheduler, &f.ctx);
      ran = true;
    }
    if (ran) continue;
    // Nobody is ready: release whole warps waiting at a shuffle, else the block's barrier.
    bool released = false;
    for (int w = 0; w * 32 < n; ++w) {
      const int lo = w * 32, hi = std::min(n, lo + 32);
      int waiting = 0;
      for (int t = lo; t < hi; ++t)
        waiting += s.fibers[static_cast<std::size_t>(t)].at == At::warp_barrier;
      if (waiting == 0) continue;
      for (int t = lo; t < hi; ++t) {
        const Fiber& o = s.fibers[static_cast<std::size_t>(t)];
        if (o.at == At::warp_barrier) continue;
        const Fiber& first = *std::find_if(s.fibers.begin() + lo, s.fibers.begin() + hi,
                                           [](const Fiber& x) { return x.at == At::warp_barrier; });
        fail(first, o, o.at == At::done ? "has returned" : "waits at __syncthreads");
      }
      for (int t = lo; t < hi; ++t) s.fibers[static_cast<std::size_t>(t)].at = At::ready;
      released = true;
    }
    if (released) continue;
    int at_barrier = 0;
    for (const Fiber& f : s.fibers) at_barrier += f.at == At::block_barrier;
    if (at_barrier == 0) return;  // every thread is done
    const Fiber& waiting = *std::find_if(s.fibers.begin(), s.fibers.end(),
                                         [](const Fiber& x) { return x.at == At::block_barrier; });
    for (const Fiber& f : s.fibers)
      if (f.at == At::done) fail(waiting, f, "has returned");
    for (Fiber& f : s.fibers) f.at = At::ready;
  }
}

// kernel<<<grid, block, shared, stream>>>(args...): every block, one after another.
class Launcher {
 public:
  Launcher(const char* name, dim3 grid, dim3 block, std::size_t shared, cudaStream_t /*ignored*/)
      : name_(name), grid_(grid), block_(block) {
    if (shared != 0)
      throw KernelError(std::string("stag: cuda interpret: kernel ") + name +
                        ": dynamic shared memory is not emulated");
  }
  // STAG_LAUNCH(...)(args...): the kernel, then its arguments.
  template <class Kernel>
  auto bind(Kernel kernel) const {
    return [launcher = *this, kernel](auto&&... args) {
      launcher.run(kernel, std::forward<decltype(args)>(args)...);
    };
  }
  template <class Kernel, class... Args>
  void run(Kernel kernel, Args&&... args) const {
    const std::size_t threads = std::size_t{block_.x} * block_.y * block_.z;
    if (threads == 0 || threads > 1024 || grid_.x == 0 || grid_.y == 0 || grid_.z == 0)
      throw KernelError(std::string("stag: cuda interpret: kernel ") + name_ +
                        ": a launch needs 1 to 1024 threads per block and a non-empty grid");
    std::lock_guard<std::mutex> lock(launch_mutex());
    State& s = state();
    if (s.stacks_mapped < threads * kStack) {
      if (s.stacks != nullptr) munmap(s.stacks, s.stacks_mapped);
      void* p = mmap(nullptr, threads * kStack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) throw KernelError("stag: cuda interpret: cannot map fiber stacks");
      s.stacks = static_cast<char*>(p);
      s.stacks_mapped = threads * kStack;
    }
    s.grid = grid_;
    s.block = block_;
    s.fibers.assign(threads, Fiber{});
    s.slots.assign((threads + 31) / 32 * 2 * 32, 0);
    s.shuffles.assign(threads, 0);
    for (std::size_t t = 0; t < threads; ++t) {
      Fiber& f = s.fibers[t];
      f.linear = static_cast<int>(t);
      f.idx =
          dim3(static_cast<unsigned>(t % block_.x), static_cast<unsigned>(t / block_.x % block_.y),
               static_cast<unsigned>(t / (std::size_t{block_.x} * block_.y)));
    }
    // The arguments are copied once, as a launch copies them to the device; each thread calls
    // the kernel with its own copies of those (kernel parameters are per thread).
    auto saved = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...);
    s.body = [&] { std::apply([&](const auto&... a) { kernel(a...); }, saved); };
    for (unsigned z = 0; z < grid_.z; ++z)
      for (unsigned y = 0; y < grid_.y; ++y)
        for (unsigned x = 0; x < grid_.x; ++x) {
          s.block_idx = dim3(x, y, z);
          run_block(name_);
        }
    s.body = nullptr;
  }

 private:
  const char* name_;
  dim3 grid_, block_;
};

}  // namespace stag::cuda_interpret::emu

#define threadIdx (::stag::cuda_interpret::emu::self().idx)
#define blockIdx (::stag::cuda_interpret::emu::state().block_idx)
#define blockDim (::stag::cuda_interpret::emu::state().block)
#define gridDim (::stag::cuda_interpret::emu::state().grid)

inline void __syncthreads() {
  stag::cuda_interpret::emu::syncthreads();
}
template <class T>
T __shfl_xor_sync(unsigned /*mask: every lane*/, T v, int lane_mask) {
  return stag::cuda_interpret::emu::shuffle(
      v, [](int lane, int m) { return lane ^ m; }, lane_mask);
}
template <class T>
T __shfl_down_sync(unsigned, T v, int delta) {
  return stag::cuda_interpret::emu::shuffle(
      v, [](int lane, int d) { return lane + d; }, delta);
}
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return stag::cuda_interpret::emu::shuffle(
      v, [](int, int s) { return s; }, src);
}

template <class T>
T atomicMin(T* p, T v) {
  const T old = *p;
  if (v < old) *p = v;
  return old;
}
template <class T>
T atomicMax(T* p, T v) {
  const T old = *p;
  if (v > old) *p = v;
  return old;
}
template <class T>
T atomicAdd(T* p, T v) {
  const T old = *p;
  *p = old + v;
  return old;
}

// ---- the CUDA runtime, as the backend's host side (runtime/cuda/) calls it -------------------
// Device memory is host memory (256-byte aligned, as cudaMalloc's); copies are memcpy; a stream
// has nothing pending when a call returns. `cudaGetLastError` reports a launch that failed.
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
inline constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaDeviceProp {
  char name[256] = "stag cuda interpret (the CUDA kernels on the CPU)";
  int major = 9, minor = 0;
  std::size_t totalGlobalMem = std::size_t{1} << 30;
};
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p == nullptr ? cudaErrorInvalidValue : cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, std::size_t bytes, cudaStream_t = nullptr) {
  std::memset(p, v, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind,
                                   cudaStream_t = nullptr) {
  std::memcpy(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t) {
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int) {
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  *p = cudaDeviceProp{};
  return cudaSuccess;
}
inline cudaError_t cudaMemGetInfo(std::size_t* free_b, std::size_t* total_b) {
  *free_b = *total_b = std::size_t{1} << 30;
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() {
  return cudaSuccess;  // a failed launch throws KernelError where it fails
}
inline const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : "cudaErrorInvalidValue";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : "invalid value (interpret mode: allocation failed)";
}

// CUB's radix sort of (key, value) pairs: stable, as CUB's is; the first call (no storage)
// asks for the temporary bytes.
namespace cub {
struct DeviceRadixSort {
  template <class K, class V>
  static cudaError_t SortPairs(void* temp, std::size_t& temp_bytes, const K* keys_in, K* keys_out,
                               const V* values_in, V* values_out, int n, int = 0,
                               int = static_cast<int>(sizeof(K) * 8), cudaStream_t = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    std::vector<std::pair<K, V>> pairs(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) pairs[static_cast<std::size_t>(i)] = {keys_in[i], values_in[i]};
    std::stable_sort(pairs.begin(), pairs.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int i = 0; i < n; ++i) {
      keys_out[i] = pairs[static_cast<std::size_t>(i)].first;
      values_out[i] = pairs[static_cast<std::size_t>(i)].second;
    }
    return cudaSuccess;
  }
};
}  // namespace cub

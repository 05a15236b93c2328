// The interpret mode of the CUDA kernels: what ops/<op>/cuda.cu uses from the CUDA toolkit,
// emulated for the host compiler, so that the same device code runs on the CPU and is checked on
// every commit without a GPU (as Triton's TRITON_INTERPRET=1 and Pallas' interpret=True do).
// Included by ops/cuda_common.cuh in place of the toolkit's headers when STAG_CUDA_INTERPRET is
// defined; tests/cuda_interpret/ builds every ops/*/cuda.cu with it (ctest label cuda_interpret).
//
// How a launch runs (STAG_LAUNCH in ops/cuda_common.cuh): the blocks one after another, the
// threads of a block as fibers (ucontext) on the calling thread, switched at __syncthreads and
// at every warp operation. What it checks, each an error naming the kernel, the block and the
// threads (on a GPU each hangs, is undefined or gives wrong numbers now and then):
// - __syncthreads is a real barrier over the block's threads; one that some thread of the block
//   does not reach (it returned, or waits at a warp operation) is an error.
// - warp operations (__shfl*_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp) take part
//   with the lanes of their mask only: every lane of the mask must reach the same operation with
//   the same mask (not one that returned, waits at __syncthreads or at another mask), a lane must
//   be in its own mask, and a shuffle must not read a lane outside the mask. Lanes past the end
//   of a partial last warp are left out of a mask. `width` splits a shuffle into segments.
// - shared memory (STAG_SHARED arrays and STAG_DYNAMIC_SHARED, which replace `__shared__`: a
//   plain `__shared__` does not compile here) is checked for races as compute-sanitizer's
//   racecheck does: each element remembers who wrote and read it since the last __syncthreads,
//   and a read of a value another thread wrote (read-after-write), a write of one another thread
//   read (write-after-read) or wrote (write-after-write) is an error, unless a __syncwarp whose
//   mask holds both threads came between. Indices are bounds-checked, and shared memory starts
//   each block poisoned (0xff bytes: NaN, or -1): reading an element the block has not written is
//   an error, as values never carry over from a previous block.
// - dynamic shared memory is the launch's `shared` bytes, per block.
// - atomics are plain read-modify-writes on global memory (fibers are never preempted).
// - streams are ignored: a launch has finished when it returns.
// Not emulated: out-of-bounds accesses to global memory (run the tests under ASan for those),
// global-memory races between blocks, atomics on shared memory, tensor cores.
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

// ---- shared memory -----------------------------------------------------------------------------
// One access remembered: the thread (linear index in the block) and how many __syncwarps its warp
// had completed since the last barrier when it made it.
struct Access {
  int thread = -1;
  std::uint32_t syncs = 0;
};
// What one element saw since the last barrier.
struct Shadow {
  std::uint64_t epoch = 0;          // the records below are of this epoch (else: none)
  std::uint64_t written_block = 0;  // block_serial of the block that last wrote it
  Access write;
  std::vector<Access> reads;  // one per thread, its latest
};

// Is `a`'s access ordered before thread `b`'s now? Same warp, and a __syncwarp after it whose mask
// holds both.
inline bool ordered(const Access& a, int b) {
  if (a.thread == b) return true;
  if (a.thread / 32 != b / 32) return false;
  const auto& syncs = state().warp_syncs[static_cast<std::size_t>(b / 32)];
  const unsigned both = (1u << (a.thread % 32)) | (1u << (b % 32));
  for (std::size_t k = a.syncs; k < syncs.size(); ++k)
    if ((syncs[k].mask & both) == both) return true;
  return false;
}
inline std::uint32_t syncs_now(int thread) {
  return static_cast<std::uint32_t>(
      state().warp_syncs[static_cast<std::size_t>(thread / 32)].size());
}

// A block of shared memory: its bytes and one shadow per element. `name` and `dims` are for
// the errors.
class SharedSpace {
 public:
  SharedSpace(const char* name, std::size_t elem_bytes, std::vector<std::size_t> dims)
      : name_(name), elem_(elem_bytes), dims_(std::move(dims)) {}

  // The element count; resets the bytes and shadows when a new block runs.
  void begin(unsigned char* bytes, std::size_t count) {
    const State& s = state();
    if (serial_ == s.block_serial && bytes == bytes_) return;
    serial_ = s.block_serial;
    bytes_ = bytes;
    count_ = count;
    std::memset(bytes_, 0xff, count_ * elem_);
    shadows_.assign(count_, Shadow{});
  }
  std::size_t count() const { return count_; }
  std::size_t elem_bytes() const { return elem_; }
  unsigned char* at(std::size_t i) { return bytes_ + i * elem_; }

  [[noreturn]] void out_of_bounds(std::int64_t i, std::size_t n) const {
    fail_here(where(self()) + ": index " + std::to_string(i) + " is out of bounds of shared `" +
              name_ + "`" + (dims_.size() > 1 ? " (a dimension of " : " (") + std::to_string(n) +
              (dims_.size() > 1 ? ")" : " elements)"));
  }
  void read(std::size_t i) {
    const State& s = state();
    const int me = self().linear;
    Shadow& sh = shadows_[i];
    if (sh.written_block != s.block_serial)
      fail_here(where(self()) + " reads shared " + element(i) +
                ", which no thread of this block has written (shared memory starts undefined "
                "in every block; if another thread writes it later, a __syncthreads is missing)");
    fresh(sh);
    if (sh.write.thread >= 0 && !ordered(sh.write, me))
      race(i, "read-after-write", "reads", thread_name(sh.write.thread), "wrote");
    for (Access& r : sh.reads)
      if (r.thread == me) {
        r.syncs = syncs_now(me);
        return;
      }
    sh.reads.push_back({me, syncs_now(me)});
  }
  void write(std::size_t i) {
    const State& s = state();
    const int me = self().linear;
    Shadow& sh = shadows_[i];
    fresh(sh);
    if (sh.write.thread >= 0 && !ordered(sh.write, me))
      race(i, "write-after-write", "writes", thread_name(sh.write.thread), "wrote");
    for (const Access& r : sh.reads)
      if (!ordered(r, me)) race(i, "write-after-read", "writes", thread_name(r.thread), "read");
    sh.write = {me, syncs_now(me)};
    sh.written_block = s.block_serial;
  }

 private:
  void fresh(Shadow& sh) const {
    const State& s = state();
    if (sh.epoch == s.epoch) return;
    sh.epoch = s.epoch;
    sh.write = {};
    sh.reads.clear();
  }
  std::string element(std::size_t i) const {
    if (dims_.empty()) return "`" + name_ + "`[" + std::to_string(i) + "]";
    std::string idx;
    for (std::size_t d = dims_.size(); d-- > 0;) {
      idx = "[" + std::to_string(i % dims_[d]) + "]" + idx;
      i /= dims_[d];
    }
    return "`" + name_ + "`" + idx;
  }
  [[noreturn]] void race(std::size_t i, const char* kind, const char* verb,
                         const std::string& other, const char* other_verb) const {
    fail_here("shared-memory race (" + std::string(kind) + ") in block " + str(state().block_idx) +
              ": " + thread_name(self().linear) + " " + verb + " " + element(i) + ", which " +
              other + " " + other_verb + " with no __syncthreads (or __syncwarp of both) between");
  }

  std::string name_;
  std::size_t elem_;
  std::vector<std::size_t> dims_;
  std::uint64_t serial_ = ~std::uint64_t{0};
  unsigned char* bytes_ = nullptr;
  std::size_t count_ = 0;
  std::vector<Shadow> shadows_;
};

// One element of shared memory as the kernel uses it: reading converts, assigning writes.
template <class T>
class SharedRef {
 public:
  SharedRef(SharedSpace& space, std::size_t i) : space_(space), i_(i) {}
  operator T() const {  // NOLINT: reads like the element
    space_.read(i_);
    T v;
    std::memcpy(&v, space_.at(i_), sizeof(T));
    return v;
  }
  const SharedRef& operator=(const T& v) const {
    space_.write(i_);
    std::memcpy(space_.at(i_), &v, sizeof(T));
    return *this;
  }
  const SharedRef& operator=(const SharedRef& o) const { return *this = static_cast<T>(o); }
  template <class U>
  const SharedRef& operator+=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) + v);
  }
  template <class U>
  const SharedRef& operator-=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) - v);
  }
  template <class U>
  const SharedRef& operator*=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) * v);
  }
  template <class U>
  const SharedRef& operator/=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) / v);
  }

 private:
  SharedSpace& space_;
  std::size_t i_;
};

// A view of dims Ns... at element `base` of a shared array: `a[i]` is the next dimension, down
// to a SharedRef.
template <class T, std::size_t N, std::size_t... Ns>
class SharedView {
 public:
  SharedView(SharedSpace& space, std::size_t base) : space_(space), base_(base) {}
  auto operator[](std::int64_t i) const {
    if (i < 0 || static_cast<std::size_t>(i) >= N) space_.out_of_bounds(i, N);
    const std::size_t at = base_ + static_cast<std::size_t>(i) * (Ns * ... * 1);
    if constexpr (sizeof...(Ns) == 0)
      return SharedRef<T>(space_, at);
    else
      return SharedView<T, Ns...>(space_, at);
  }

 private:
  SharedSpace& space_;
  std::size_t base_;
};

// STAG_SHARED(T, name, N, ...): a function-local static (one per kernel, as a __shared__ array
// is per block; blocks run one after another), reset at every block.
template <class T, std::size_t... Ns>
class SharedArray {
  static_assert(std::is_trivially_copyable_v<T>, "stag: shared memory holds plain values");
  static constexpr std::size_t kCount = (Ns * ...);

 public:
  explicit SharedArray(const char* name) : space_(name, sizeof(T), {Ns...}) {}
  auto operator[](std::int64_t i) const {
    space_.begin(bytes_, kCount);
    return SharedView<T, Ns...>(space_, 0)[i];
  }

 private:
  mutable SharedSpace space_;
  alignas(16) mutable unsigned char bytes_[kCount * sizeof(T)];
};

// STAG_DYNAMIC_SHARED(T, name): the launch's dynamic shared memory as T elements.
template <class T>
class DynamicShared {
  static_assert(std::is_trivially_copyable_v<T>, "stag: shared memory holds plain values");

 public:
  explicit DynamicShared(const char* name) : space_(name, sizeof(T), {}) {}
  SharedRef<T> operator[](std::int64_t i) const {
    State& s = state();
    space_.begin(s.dynamic.data(), s.dynamic_bytes / sizeof(T));
    if (i < 0 || static_cast<std::size_t>(i) >= space_.count())
      space_.out_of_bounds(i, space_.count());
    return SharedRef<T>(space_, static_cast<std::size_t>(i));
  }

 private:
  mutable SharedSpace space_;
};

// ---- the scheduler -----------------------------------------------------------------------------
inline void trampoline() {
  State& s = state();
  s.body();
  s.current->at = At::done;
  swapcontext(&s.current->ctx, &s.scheduler);
}

inline const char* kind_name(WarpKind k) {
  switch (k) {
    case WarpKind::shuffle:
      return "a warp shuffle";
    case WarpKind::ballot:
      return "__ballot_sync";
    case WarpKind::any:
      return "__any_sync";
    case WarpKind::all:
      return "__all_sync";
    default:
      return "__syncwarp";
  }
}
inline std::string hex(unsigned m) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", m);
  return b;
}
inline std::string waits_at(const Fiber& f) {
  switch (f.at) {
    case At::block_barrier:
      return "waits at __syncthreads";
    case At::warp_op:
      return std::string("waits at ") + kind_name(f.op.kind) + " with mask " + hex(f.op.mask);
    case At::done:
      return "has returned";
    default:
      return "is running";
  }
}

// Completes the warp operations whose lanes have all arrived. False when none could; then, if a
// lane waits for one that will not come (it returned, or waits at __syncthreads or at another
// warp operation), that is an error.
inline bool release_warp_ops() {
  State& s = state();
  const int n = static_cast<int>(s.fibers.size());
  bool released = false;
  std::string stuck;
  for (int w = 0; w * 32 < n; ++w) {
    const int lo = w * 32, lanes = std::min(32, n - lo);
    const unsigned present = lanes == 32 ? ~0u : (1u << lanes) - 1;
    unsigned handled = 0;
    for (int l = 0; l < lanes; ++l) {
      Fiber& f = s.fibers[static_cast<std::size_t>(lo + l)];
      if (f.at != At::warp_op || (handled >> l & 1u) != 0) continue;
      if ((f.op.mask >> l & 1u) == 0)
        throw KernelError(prefix() + where(f) + " calls " + kind_name(f.op.kind) + " with mask " +
                          hex(f.op.mask) + ", which does not hold its own lane " +
                          std::to_string(l) + " (on a GPU this is undefined)");
      const unsigned group = f.op.mask & present;
      const Fiber* absent = nullptr;
      for (int g = 0; g < lanes && absent == nullptr; ++g) {
        const Fiber& o = s.fibers[static_cast<std::size_t>(lo + g)];
        if ((group >> g & 1u) != 0 &&
            (o.at != At::warp_op || o.op.kind != f.op.kind || o.op.mask != f.op.mask))
          absent = &o;
      }
      if (absent != nullptr) {
        if (stuck.empty())
          stuck = prefix() + where(f) + " " + waits_at(f) + " but " + where(*absent) + " " +
                  waits_at(*absent) + " (on a GPU this hangs or is undefined)";
        continue;
      }
      std::uint64_t votes = 0;
      for (int g = 0; g < lanes; ++g)
        if ((group >> g & 1u) != 0 && s.fibers[static_cast<std::size_t>(lo + g)].op.value != 0)
          votes |= 1ull << g;
      for (int g = 0; g < lanes; ++g) {
        if ((group >> g & 1u) == 0) continue;
        Fiber& o = s.fibers[static_cast<std::size_t>(lo + g)];
        switch (o.op.kind) {
          case WarpKind::shuffle: {
            const int src = o.op.src;
            if (src >= lanes || src == g) {  // past a partial warp's end: its own value
              o.op.result = o.op.value;
            } else if ((group >> src & 1u) == 0) {
              throw KernelError(prefix() + where(o) + " shuffles from lane " + std::to_string(src) +
                                ", which is not in the mask " + hex(o.op.mask) +
                                " (on a GPU the value is undefined)");
            } else {
              o.op.result = s.fibers[static_cast<std::size_t>(lo + src)].op.value;
            }
            break;
          }
          case WarpKind::ballot:
            o.op.result = votes;
            break;
          case WarpKind::any:
            o.op.result = votes != 0;
            break;
          case WarpKind::all:
            o.op.result = votes == group;
            break;
          case WarpKind::sync:
            break;
        }
        o.at = At::ready;
      }
      if (f.op.kind == WarpKind::sync) s.warp_syncs[static_cast<std::size_t>(w)].push_back({group});
      handled |= group;
      released = true;
    }
  }
  if (!released && !stuck.empty()) throw KernelError(stuck);
  return released;
}

// Runs one block to the end: the fibers in turn until each is done, completing the warp
// operations and the barrier once every thread they wait for has arrived.
inline void run_block() {
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
  ++s.block_serial;
  ++s.epoch;
  s.warp_syncs.assign(static_cast<std::size_t>((n + 31) / 32), {});
  for (;;) {
    bool ran = false;
    for (int t = 0; t < n; ++t) {
      Fiber& f = s.fibers[static_cast<std::size_t>(t)];
      if (f.at != At::ready) continue;
      s.current = &f;
      swapcontext(&s.scheduler, &f.ctx);
      if (f.at == At::failed) throw KernelError(s.error);
      ran = true;
    }
    if (ran) continue;
    // Nobody is ready: complete the warp operations whose lanes are all there, else the barrier.
    // (Past release_warp_ops, no thread waits at a warp operation.)
    if (release_warp_ops()) continue;
    const auto waiting = std::find_if(s.fibers.begin(), s.fibers.end(),
                                      [](const Fiber& x) { return x.at == At::block_barrier; });
    if (waiting == s.fibers.end()) return;  // every thread is done
    for (const Fiber& f : s.fibers)
      if (f.at == At::done)
        throw KernelError(prefix() + where(*waiting) + " waits at __syncthreads but " + where(f) +
                          " has returned (on a GPU this hangs or is undefined)");
    for (Fiber& f : s.fibers) f.at = At::ready;
    ++s.epoch;
    for (auto& w : s.warp_syncs) w.clear();
  }
}

// Runs `op` now, or records it where `s` captures (a launch, copy, memset or host function).
inline cudaError_t enqueue(cudaStream_t s, std::function<void()> op) {
  if (s != nullptr && s->capture != nullptr) {
    if (!s->invalid.empty()) return cudaErrorStreamCaptureInvalidated;
    s->capture->push_back(std::move(op));
    return cudaSuccess;
  }
  op();
  return cudaSuccess;
}
// What a capture cannot hold, called while `s` (or, for s null, any stream) captures: the
// capture becomes invalid, as on a GPU.
inline cudaError_t not_in_capture(cudaStream_t s, const char* what) {
  cudaStream_t c = s != nullptr && s->capture != nullptr ? s : state().capturing;
  if (c == nullptr) return cudaSuccess;
  if (c->invalid.empty()) c->invalid = what;
  return cudaErrorStreamCaptureUnsupported;
}

// kernel<<<grid, block, shared, stream>>>(args...): every block, one after another.
class Launcher {
 public:
  Launcher(const char* name, dim3 grid, dim3 block, std::size_t shared, cudaStream_t stream)
      : name_(name), grid_(grid), block_(block), shared_(shared), stream_(stream) {}
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
    if (shared_ > kMaxDynamicShared)
      throw KernelError(std::string("stag: cuda interpret: kernel ") + name_ + ": " +
                        std::to_string(shared_) + " bytes of dynamic shared memory, over the " +
                        std::to_string(kMaxDynamicShared) + " a block may have");
    // The arguments are copied once, as a launch copies them to the device; each thread calls
    // the kernel with its own copies of those (kernel parameters are per thread).
    auto saved = std::make_tuple(std::decay_t<Args>(std::forward<Args>(args))...);
    // Run now, or recorded where the stream captures (run at each replay).
    enqueue(stream_, [launcher = *this, kernel, saved] { launcher.execute(kernel, saved); });
  }

  // An H100's opt-in maximum per block (227 KiB); the default without opting in is 48 KiB.
  static constexpr std::size_t kMaxDynamicShared = 227 * 1024;

 private:
  template <class Kernel, class Saved>
  void execute(Kernel kernel, const Saved& saved) const {
    const std::size_t threads = std::size_t{block_.x} * block_.y * block_.z;
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
    s.kernel = name_;
    s.dynamic.assign(shared_, 0xff);
    s.dynamic_bytes = shared_;
    s.fibers.assign(threads, Fiber{});
    for (std::size_t t = 0; t < threads; ++t) {
      Fiber& f = s.fibers[t];
      f.linear = static_cast<int>(t);
      f.idx =
          dim3(static_cast<unsigned>(t % block_.x), static_cast<unsigned>(t / block_.x % block_.y),
               static_cast<unsigned>(t / (std::size_t{block_.x} * block_.y)));
    }
    s.body = [&] { std::apply([&](const auto&... a) { kernel(a...); }, saved); };
    for (unsigned z = 0; z < grid_.z; ++z)
      for (unsigned y = 0; y < grid_.y; ++y)
        for (unsigned x = 0; x < grid_.x; ++x) {
          s.block_idx = dim3(x, y, z);
          run_block();
        }
    s.body = nullptr;
  }

  const char* name_;
  dim3 grid_, block_;
  std::size_t shared_;
  cudaStream_t stream_;
};

}  // namespace stag::cuda_interpret::emu

#define threadIdx (::stag::cuda_interpret::emu::self().idx)
#define blockIdx (::stag::cuda_interpret::emu::state().block_idx)
#define blockDim (::stag::cuda_interpret::emu::state().block)
#define gridDim (::stag::cuda_interpret::emu::state().grid)
inline constexpr int warpSize = 32;

inline void __syncthreads() {
  stag::cuda_interpret::emu::syncthreads();
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  namespace e = stag::cuda_interpret::emu;
  e::warp_op(e::WarpKind::sync, mask, 0, 0);
}
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32) {
  return stag::cuda_interpret::emu::shuffle(mask, v, src, width, 0);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return stag::cuda_interpret::emu::shuffle(mask, v, static_cast<int>(delta), width, 1);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  return stag::cuda_interpret::emu::shuffle(mask, v, static_cast<int>(delta), width, 2);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  return stag::cuda_interpret::emu::shuffle(mask, v, lane_mask, width, 3);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  namespace e = stag::cuda_interpret::emu;
  return static_cast<unsigned>(e::warp_op(e::WarpKind::ballot, mask, predicate != 0, 0));
}
inline int __any_sync(unsigned mask, int predicate) {
  namespace e = stag::cuda_interpret::emu;
  return static_cast<int>(e::warp_op(e::WarpKind::any, mask, predicate != 0, 0));
}
inline int __all_sync(unsigned mask, int predicate) {
  namespace e = stag::cuda_interpret::emu;
  return static_cast<int>(e::warp_op(e::WarpKind::all, mask, predicate != 0, 0));
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
// has nothing pending when a call returns, unless it captures (a CUDA Graph: below).
// `cudaGetLastError` reports a launch that failed.
enum cudaMemcpyKind {
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
};
inline constexpr unsigned cudaStreamNonBlocking = 1;
struct cudaDeviceProp {
  char name[256] = "stag cuda interpret (the CUDA kernels on the CPU)";
  int major = 9, minor = 0;
  std::size_t totalGlobalMem = std::size_t{1} << 30;
};
inline cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  *p = nullptr;
  namespace e = stag::cuda_interpret::emu;
  if (const cudaError_t c = e::not_in_capture(nullptr, "cudaMalloc"); c != cudaSuccess) return c;
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  return *p == nullptr ? cudaErrorInvalidValue : cudaSuccess;
}
inline cudaError_t cudaFree(void* p) {
  namespace e = stag::cuda_interpret::emu;
  if (const cudaError_t c = e::not_in_capture(nullptr, "cudaFree"); c != cudaSuccess) return c;
  std::free(p);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, std::size_t bytes, cudaStream_t s = nullptr) {
  return stag::cuda_interpret::emu::enqueue(s, [=] { std::memset(p, v, bytes); });
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes,
                                   cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  namespace e = stag::cuda_interpret::emu;
  // NOTE: a graph's copy reads its source when replayed; a pageable host buffer cannot be one.
  if (kind != cudaMemcpyDeviceToDevice && s != nullptr && s->capture != nullptr)
    return e::not_in_capture(s, "a copy between host and device memory");
  return e::enqueue(s, [=] { std::memcpy(dst, src, bytes); });
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (s != nullptr && s->capture != nullptr)
    return stag::cuda_interpret::emu::not_in_capture(s, "cudaStreamSynchronize");
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
  *s = new CUstream_st{};
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
// A host function in stream order (a host node of a graph).
using cudaHostFn_t = void (*)(void*);
inline cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  return stag::cuda_interpret::emu::enqueue(s, [=] { fn(data); });
}

// CUDA Graphs: a stream's capture records what is enqueued on it; an instantiated graph replays
// the records in order on each launch (the emulation has one stream, so the order is the
// graph's dependencies).
inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
  namespace e = stag::cuda_interpret::emu;
  if (s == nullptr || s->capture != nullptr || e::state().capturing != nullptr)
    return cudaErrorInvalidValue;  // the legacy stream cannot capture; nor can one twice
  s->capture = new std::vector<std::function<void()>>();
  s->invalid.clear();
  e::state().capturing = s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
  namespace e = stag::cuda_interpret::emu;
  *graph = nullptr;
  if (s == nullptr || s->capture == nullptr) return cudaErrorInvalidValue;
  std::unique_ptr<std::vector<std::function<void()>>> ops(s->capture);
  s->capture = nullptr;
  e::state().capturing = nullptr;
  if (!s->invalid.empty()) return cudaErrorStreamCaptureInvalidated;
  *graph = new CUgraph_st{std::move(*ops)};
  return cudaSuccess;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph,
                                        unsigned long long /*flags*/ = 0) {
  if (graph == nullptr) return cudaErrorInvalidValue;
  *exec = new CUgraphExec_st{graph->ops};
  return cudaSuccess;
}
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (exec == nullptr) return cudaErrorInvalidValue;
  return stag::cuda_interpret::emu::enqueue(s, [exec] {
    for (const auto& op : exec->ops) op();
  });
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete g;
  return cudaSuccess;
}
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete e;
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
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    default:
      return "cudaErrorInvalidValue";
  }
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    default:
      return "invalid value (interpret mode: allocation failed, or a bad capture call)";
  }
}

// CUB's radix sort of (key, value) pairs: stable, as CUB's is; the first call (no storage)
// asks for the temporary bytes.
namespace cub {
struct DeviceRadixSort {
  template <class K, class V>
  static cudaError_t SortPairs(void* temp, std::size_t& temp_bytes, const K* keys_in, K* keys_out,
                               const V* values_in, V* values_out, int n, int = 0,
                               int = static_cast<int>(sizeof(K) * 8), cudaStream_t s = nullptr) {
    if (temp == nullptr) {
      temp_bytes = 1;
      return cudaSuccess;
    }
    return stag::cuda_interpret::emu::enqueue(s, [=] {
      std::vector<std::pair<K, V>> pairs(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) pairs[static_cast<std::size_t>(i)] = {keys_in[i], values_in[i]};
      std::stable_sort(pairs.begin(), pairs.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (int i = 0; i < n; ++i) {
        keys_out[i] = pairs[static_cast<std::size_t>(i)].first;
        values_out[i] = pairs[static_cast<std::size_t>(i)].second;
      }
    });
  }
};
}  // namespace cub

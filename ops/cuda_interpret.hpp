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
//
// The parts: cuda_interpret_fibers.hpp (names, types, fibers, warp operations),
// cuda_interpret_shared.hpp (shared memory), this file (the scheduler, launches, streams, graphs
// and the CUDA runtime API).
#pragma once

#include <stag/ops/cuda_interpret_shared.hpp>

namespace stag::cuda_interpret::emu {

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

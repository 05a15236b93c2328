// The CUDA backend: device memory, copies on one stream, plan state, and the end-of-step check
// that turns a kernel's bad-input report into the CPU's error message.
#include <cstring>

#include <stag/runtime/cuda/backend.hpp>
#include <stag/runtime/cuda/kernels.hpp>

namespace stag::STAG_CUDA_NAMESPACE {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw Error(std::string("stag: cuda: ") + what + ": " + cudaGetErrorName(e) + " (" +
                cudaGetErrorString(e) + ")");
}

bool available(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why)
      *why = e != cudaSuccess ? std::string("no usable GPU (") + cudaGetErrorName(e) + ": " +
                                    cudaGetErrorString(e) + ")"
                              : std::string("no GPU is visible");
    cudaGetLastError();  // clear the sticky error of a failed query
    return false;
  }
  return true;
}

std::shared_ptr<DeviceBackend> make_backend() {
  return std::make_shared<Backend>();
}

Backend::Backend() {
  check(cudaSetDevice(0), "cudaSetDevice(0)");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  describe_ = std::string("cuda: ") + prop.name + " (sm_" + std::to_string(prop.major) +
              std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) +
              " GiB)";
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
#if !defined(STAG_CUDA_INTERPRET)
  if (cublasLtCreate(&blas_) != CUBLAS_STATUS_SUCCESS)
    throw Error("stag: cuda: cublasLtCreate failed");
  check(cudaMalloc(&blas_ws_, kBlasWorkspace), "cudaMalloc (cuBLASLt workspace)");
#endif
}

Backend::~Backend() {
  cudaStreamSynchronize(stream_);
#if !defined(STAG_CUDA_INTERPRET)
  cudaFree(blas_ws_);
  cublasLtDestroy(blas_);
#endif
  cudaStreamDestroy(stream_);
}

void* Backend::alloc(std::size_t bytes) {
  void* p = nullptr;
  const std::size_t n = bytes == 0 ? 256 : bytes;
  const cudaError_t e = cudaMalloc(&p, n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw Error("stag: cuda: out of device memory allocating " + std::to_string(n) + " bytes (" +
                std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) +
                " MiB)");
  }
  check(cudaMemsetAsync(p, 0, n, stream_), "cudaMemsetAsync");
  return p;
}

void Backend::free(void* p) noexcept {
  if (p == nullptr) return;
  cudaStreamSynchronize(stream_);  // no kernel of this stream still uses it
  cudaFree(p);
}

void Backend::to_device(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream_), "copy to the device");
}

void Backend::to_host(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream_), "copy to the host");
  synchronize();
}

void Backend::synchronize() {
  check(cudaStreamSynchronize(stream_), "a kernel of the step failed");
}

std::uint8_t Backend::strided(OpId op) const {
  return strided_bits(op);
}

PlanState::~PlanState() {
  for (auto& [key, exec] : execs) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec));
  if (backend && bad) backend->free(bad);
  if (backend && rng) backend->free(rng);
}

std::unique_ptr<DevicePlanState> Backend::plan_state(const GraphView&, int nodes, bool tf32,
                                                     bool graphs) {
  auto s = std::make_unique<PlanState>();
  s->backend = this;
  s->tf32 = tf32;
  if (!graphs) s->eager_because = "CUDA Graphs are off (SessionOptions::cuda_graphs)";
  s->reporters.assign(static_cast<std::size_t>(nodes), nullptr);
  s->bad = static_cast<unsigned long long*>(alloc(sizeof(unsigned long long)));
  check(cudaMemsetAsync(s->bad, 0xff, sizeof(unsigned long long), stream_), "cudaMemsetAsync");
  s->rng = static_cast<std::uint64_t*>(alloc(2 * sizeof(std::uint64_t)));
  return s;
}

void Backend::begin_step(DevicePlanState& ds, const RunState& state) {
  auto& s = static_cast<PlanState&>(ds);
  if (s.rng_written && s.rng_host[0] == state.seed && s.rng_host[1] == state.step) return;
  // NOTE: a pageable source is staged before cudaMemcpyAsync returns, so the next step may
  // change rng_host while this copy is still queued.
  s.rng_host[0] = state.seed;
  s.rng_host[1] = state.step;
  s.rng_written = true;
  to_device(s.rng, s.rng_host, sizeof s.rng_host);
}

// The step's launches captured once per key (stream capture: nothing runs while it records),
// instantiated and replayed: one launch per step instead of one per kernel. A capture that
// fails (a kernel's host side did something a capture cannot hold) turns the plan's graphs
// off, with the reason, and the step runs its kernels one by one.
void Backend::run_step(DevicePlanState& ds, const StepKey& key,
                       const std::function<void()>& enqueue) {
  auto& s = static_cast<PlanState&>(ds);
  if (!s.eager_because.empty()) {  // graphs off, or a capture failed
    enqueue();
    return;
  }
  for (const auto& [k, exec] : s.execs)
    if (k == key) {
      check(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), stream_), "cudaGraphLaunch");
      ++s.replayed;
      return;
    }
  check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
        "cudaStreamBeginCapture");
  std::string failed;
  try {
    enqueue();
  } catch (const std::exception& e) {
    failed = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  if (failed.empty() && ended != cudaSuccess)
    failed = std::string("cudaStreamEndCapture: ") + cudaGetErrorName(ended);
  cudaGraphExec_t exec = nullptr;
  if (failed.empty()) {
    const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
    if (made != cudaSuccess)
      failed = std::string("cudaGraphInstantiate: ") + cudaGetErrorName(made);
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (!failed.empty()) {
    cudaGetLastError();  // the capture's error is not the next launch's
    s.eager_because = "the step could not be captured as a CUDA Graph: " + failed;
    enqueue();  // as without graphs: a real error in a kernel is thrown here
    return;
  }
  s.execs.emplace_back(key, exec);
  ++s.captured;
  check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
}

std::unique_ptr<Kernel> Backend::make_kernel(const KernelNode& n, DevicePlanState& s) {
  const OpSupport& sup = support(op_id(n.n().op));
  if (sup.make == nullptr) refuse(n, sup.unsupported ? sup.unsupported : "no CUDA kernel");
  return sup.make(n, static_cast<PlanState&>(s));
}

void Backend::finish_step(DevicePlanState& ds) {
  auto& s = static_cast<PlanState&>(ds);
  unsigned long long word = ~0ull;
  check(cudaMemcpyAsync(&word, s.bad, sizeof word, cudaMemcpyDeviceToHost, stream_),
        "reading the bad-input word");
  synchronize();  // also reports any kernel that failed
  if (word == ~0ull) return;
  check(cudaMemsetAsync(s.bad, 0xff, sizeof word, stream_), "cudaMemsetAsync");
  const auto node = static_cast<std::size_t>(word >> kBadPositionBits);
  if (node < s.reporters.size() && s.reporters[node] != nullptr)
    s.reporters[node]->rethrow_on_host();
  throw Error("stag: cuda: a kernel reported a bad input at node " + std::to_string(node));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

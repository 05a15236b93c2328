// Devices a Session can run on, and the interface a non-CPU backend gives the planner: where a
// plan's arena lives, how bytes move in and out, and what runs each node. The planner does the
// same lowering for every device (shapes, views, liveness, the memory plan); only the arena and
// the kernels come from the backend. runtime/cuda/ implements it for NVIDIA GPUs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <stag/ops/kernel_node.hpp>

namespace stag {

enum class Device : std::uint8_t {
  cpu,   // oneDNN primitives and own kernels (runtime/cpu/)
  cuda,  // an NVIDIA GPU: own kernels and cuBLASLt (runtime/cuda/); needs a CUDA build
  // The CUDA backend's plans and kernels run on the CPU in interpret mode (ops/cuda_interpret.hpp):
  // the same factories, launches and strides, a host GEMM for cuBLASLt. Slow; it checks the
  // kernels' logic where no GPU is. Always built.
  cuda_interpret,
};
std::string_view device_name(Device d);
// The device device_name() names ("cpu", "cuda", "cuda_interpret"); nullopt for another name.
std::optional<Device> device_from_name(std::string_view name);

// What one plan holds on a device besides its arena: the bad-input word and the kernels that
// can report into it (the plan asks them for the message), the step's random-number word, and
// the step's captured CUDA Graphs.
class DevicePlanState {
 public:
  virtual ~DevicePlanState() = default;
  // CUDA Graphs (PlanOptions::cuda_graphs): how many steps were captured and how many replayed
  // a capture; why the plan runs its kernels one by one instead ("" while graphs are on).
  int captured = 0;
  std::int64_t replayed = 0;
  std::string eager_because;
};

// What a captured step depends on besides its pointers (which a plan fixes): the host-side
// choices its kernels make. A step with another key is captured again (dropout's seed and step
// are read on the device, so they need no key).
struct StepKey {
  bool training = false;
  std::int64_t row_offset = 0, rows = 0;
  bool operator==(const StepKey&) const = default;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual Device device() const = 0;
  virtual std::string describe() const = 0;  // e.g. "cuda: NVIDIA H200 (sm_90, 139 GiB)"

  // Device memory, zero-filled; a stag::Error (naming the size) when it cannot be had.
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) noexcept = 0;
  // Host to device is asynchronous on the backend's stream (the host buffer must live until the
  // next synchronize()); device to host waits for the stream.
  virtual void to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void synchronize() = 0;

  // Bit k: the backend's kernel for `op` reads input k through any strides (a permute feeding
  // it stays a view).
  virtual std::uint8_t strided(OpId op) const = 0;

  // Per plan: the state its kernels share (made before the first kernel). tf32: matmuls may
  // round their f32 operands to TF32 (faster, about 3 decimal digits).
  // graphs: capture the step as a CUDA Graph once and replay it (PlanOptions::cuda_graphs).
  virtual std::unique_ptr<DevicePlanState> plan_state(const GraphView& g, int nodes, bool tf32,
                                                      bool graphs) = 0;
  // The kernel of one node (views point into device memory), or a stag::Error that names the
  // op and the node when this backend cannot run it (an unsupported op, dtype or layout).
  virtual std::unique_ptr<Kernel> make_kernel(const KernelNode& n, DevicePlanState& s) = 0;
  // After a step's kernels are enqueued: waits for them and throws the Error of the first bad
  // input a kernel reported (the same message as the CPU's), then clears the report.
  virtual void finish_step(DevicePlanState& s) = 0;
  // Before a step's kernels are enqueued: the device copy of what they read of the RunState
  // (dropout's seed and step).
  virtual void begin_step(DevicePlanState& s, const RunState& state) = 0;
  // Enqueues a step: `enqueue` launches every kernel in order. A backend with graphs captures
  // the launches once per key and replays them; without, or where capture fails (the reason
  // goes to s.eager_because), it calls `enqueue`.
  virtual void run_step(DevicePlanState& s, const StepKey& key,
                        const std::function<void()>& enqueue) = 0;
};

// The backend of a device (one per process and device, shared by every session). Device::cuda
// throws a stag::Error when this stag was built without CUDA or no GPU is present; the message
// says which.
std::shared_ptr<DeviceBackend> device_backend(Device d);
// "" when the device's backend has a kernel for every op of `g`; otherwise the refusal for the
// first node it cannot run, e.g. "stag: cuda cannot run node 'attn' (op attention): ...". Needs
// no GPU (the op table is static); a stag built without the device says so.
std::string device_unsupported(Device d, const GraphView& g);
// Whether Device::cuda can run here (built with CUDA, and a GPU is visible); `why` says why not.
bool cuda_available(std::string* why = nullptr);

}  // namespace stag

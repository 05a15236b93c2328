// The CUDA backend's host side (compiled by the host compiler, linked with the CUDA runtime):
// the per-plan state, the node kernel that calls a launch function of ops/cuda_launch.hpp, and
// the table of every op's CUDA factory or the reason it has none.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <stag/ops/cuda_launch.hpp>
#include <stag/ops/registry.hpp>
#include <stag/runtime/device.hpp>

namespace stag::STAG_CUDA_NAMESPACE {

class Backend;

struct PlanState final : DevicePlanState {
  Backend* backend = nullptr;
  unsigned long long* bad = nullptr;  // device word (Launch::bad), ~0 when clean
  std::uint64_t* rng = nullptr;       // device {seed, step} (Launch::rng)
  std::uint64_t rng_host[2] = {};     // what it holds (written before a step that changes it)
  bool rng_written = false;
  bool tf32 = false;
  // The step's captures (cudaGraphExec_t), by key.
  std::vector<std::pair<StepKey, void*>> execs;
  // By node: the kernel that may report a bad input (to reproduce the CPU's message).
  std::vector<class NodeKernel*> reporters;
  ~PlanState() override;
};

// A stag view as a launch tensor (same dims, strides and device pointer).
Tensor tensor(const TensorView& v);
// `whole` restricted to [start, start + len) along `axis` (same strides, moved data pointer).
Tensor sub(const Tensor& whole, int axis, std::int64_t start, std::int64_t len);

// One node: a launch on the backend's stream, checked for launch errors. A node whose kernels
// can find bad inputs keeps its node's views, so that after a bad report the host can copy the
// inputs back and let the reference kernel throw the CPU's error message.
class NodeKernel final : public Kernel {
 public:
  // reports: the node's kernels may record a bad input (ids, labels, lengths, divisors).
  NodeKernel(const KernelNode& n, PlanState& s, std::string what, bool reports = false);
  ~NodeKernel() override;
  void set(std::function<void(const Launch&)> fn) { fn_ = std::move(fn); }
  // Device scratch owned by this kernel (allocated once, at plan time).
  void* workspace(std::size_t bytes);
  void run() override;
  std::string describe() const override { return what_; }
  // After this node reported a bad input: throws the CPU's Error for it.
  [[noreturn]] void rethrow_on_host() const;

 private:
  const GraphView& g_;
  int node_;
  std::vector<TensorView> in_;
  TensorView out_;
  const RunState& state_;
  PlanState& s_;
  std::string what_;
  std::function<void(const Launch&)> fn_;
  std::vector<void*> workspaces_;
};

using Factory = std::unique_ptr<Kernel> (*)(const KernelNode&, PlanState&);
struct OpSupport {
  Factory make = nullptr;
  const char* unsupported = nullptr;  // why the op has no CUDA kernel (make is then null)
};
// By op: the CUDA factory or the reason there is none. Every op has one or the other (a
// static_assert in kernels.cpp names any op that has neither).
const OpSupport& support(OpId op);
std::uint8_t strided_bits(OpId op);

// How a matmul's batch dims map onto cuBLASLt calls: `batch` matrices at linear strides per
// call, one call per entry of outer_* (element offsets); a weight shared by every batch row
// folds the batch into m (then batch = 1). Pure host arithmetic (tested without a GPU).
struct Gemm {
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements
  std::vector<std::int64_t> outer_a, outer_b, outer_c;
};
Gemm plan_gemm(const TensorView& a, const TensorView& b, const TensorView& c, bool ta);
std::string unsupported(const GraphView& g);  // see stag::device_unsupported

// cuBLASLt matmul (runtime/cuda/matmul.cpp).
std::unique_ptr<Kernel> make_matmul(const KernelNode& n, PlanState& s);

// Refuses a node with the reason: "stag: cuda cannot run node '<name>' (op <op>): <why>".
[[noreturn]] void refuse(const KernelNode& n, const std::string& why);

}  // namespace stag::STAG_CUDA_NAMESPACE

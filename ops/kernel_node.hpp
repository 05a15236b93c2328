// The kernel interface every backend implements. An op's factory for a backend (OpDef<Id>::cpu in
// ops/<op>/cpu.cpp; the CUDA backend's table in runtime/cuda/kernels.cpp) turns a planned node
// (a KernelNode: the node, its concrete views, the run state) into a Kernel, built once at plan
// time, whose run() executes one step. No backend's library is needed to read it: the CPU's
// oneDNN types are in ops/cpu_kernel.hpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <stag/ops/kernel.hpp>
#include <stag/ops/op.hpp>

namespace stag {

// The CPU backend's per-session state (oneDNN engine, threads, hand-offs between kernels;
// ops/cpu_kernel.hpp). Other backends keep their own state beside the node (DevicePlanState).
struct CpuContext;

// Work the planner folded into a node's kernel (today: a matmul's consumers): the bias add,
// a constant scale, then an activation, applied in this order.
struct PostOp {
  enum class Kind : std::uint8_t { bias, scale, eltwise };
  Kind kind = Kind::bias;
  TensorView bias;    // Kind::bias: [N], broadcast over the rows
  float scale = 1.f;  // Kind::scale
  OpId act{};         // Kind::eltwise: relu, gelu, gelu_tanh, silu, sigmoid or tanh
  int node = -1;      // the graph node this folds in
};

// What a kernel factory sees: the node, its concrete input and output views (data pointers
// are final: buffers are planned before kernels are made), and the run state it reads.
struct KernelNode {
  const GraphView& g;
  int node = -1;
  std::vector<TensorView> in;
  TensorView out;
  CpuContext& ctx;
  const RunState& state;
  std::vector<PostOp> post{};  // only for ops that declare cpu_post_ops (matmul)

  const Node& n() const { return g.node(node); }
  const Attrs& attr() const { return g.attr(node); }
  std::string name() const { return g.name(node); }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run() = 0;
  // What executes the node, e.g. "onednn matmul (brg:avx512_core)" or "own embedding".
  virtual std::string describe() const = 0;
};

}  // namespace stag

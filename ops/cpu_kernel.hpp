// The CPU backend: what its kernels share (oneDNN engine, primitives, staging). An op provides
// `OpDef<Id>::cpu(const KernelNode&)` (ops/kernel_node.hpp, the interface every backend
// implements) in ops/<op>/cpu.cpp, returning a kernel built once at plan time (oneDNN primitive
// descriptors and primitives, or an own kernel) whose run() executes one step. Returning nullptr
// means "not for this configuration": the planner falls back to the op's reference kernel.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include <stag/ops/kernel.hpp>
#include <stag/ops/kernel_node.hpp>
#include <stag/ops/op.hpp>
#include <stag/runtime/array.hpp>

namespace stag {

// Shared by every kernel of a session.
struct CpuContext {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  int threads = 1;  // threads own kernels may use (oneDNN threads with OpenMP)
  // Values one kernel hands to a later kernel of the same plan, keyed by the graph and the
  // producing node: the fused attention's row statistics (read by its backward), and the
  // backward's dk and dv (read by attention_backward_kv). Kernels hold the shared_ptr they
  // made or found when they were built, so a later plan of the same graph replaces the entry
  // without disturbing an earlier plan's kernels.
  std::map<std::pair<const void*, int>, std::shared_ptr<std::vector<float>>> handoff;
};

// Counts oneDNN primitive creations (tests prove that steady-state steps create none).
std::atomic<std::int64_t>& primitive_creations();

// A memory descriptor for a view (dims and strides as they are; f32/bf16/i32/s8 types).
dnnl::memory::desc memory_desc(const TensorView& v);
dnnl::memory::data_type onednn_type(DType t);

// Builds a primitive from a primitive descriptor, counting the creation.
template <class Prim, class Pd>
Prim make_primitive(const Pd& pd) {
  primitive_creations().fetch_add(1, std::memory_order_relaxed);
  return Prim(pd);
}

// The implementation name oneDNN chose for a primitive descriptor.
std::string impl_name(const dnnl::primitive_desc_base& pd);

}  // namespace stag

namespace stag {

// A kernel that executes oneDNN primitives (usually one) with memories bound at plan time.
class OnednnKernel final : public Kernel {
 public:
  struct Step {
    dnnl::primitive prim;
    std::unordered_map<int, dnnl::memory> args;
  };
  OnednnKernel(const dnnl::engine& eng, std::vector<Step> steps, std::string what)
      : stream_(eng), steps_(std::move(steps)), what_(std::move(what)) {}
  OnednnKernel(const dnnl::engine& eng, dnnl::primitive prim,
               std::unordered_map<int, dnnl::memory> args, std::string what)
      : OnednnKernel(eng, std::vector<Step>{Step{std::move(prim), std::move(args)}},
                     std::move(what)) {}
  void run() override {
    for (Step& s : steps_) s.prim.execute(stream_, s.args);
    stream_.wait();
  }
  std::string describe() const override { return what_; }
  // Scratch memory the kernel owns (e.g. contiguous copies of strided inputs).
  std::vector<Array> scratch;

 private:
  dnnl::stream stream_;
  std::vector<Step> steps_;
  std::string what_;
};

// A oneDNN memory object over a view's data.
inline dnnl::memory memory_of(const TensorView& v, const dnnl::engine& eng) {
  return dnnl::memory(memory_desc(v), eng, v.data);
}
inline dnnl::memory memory_of(const dnnl::memory::desc& md, const TensorView& v,
                              const dnnl::engine& eng) {
  return dnnl::memory(md, eng, v.data);
}

// Whether oneDNN multiplies bf16 matrices on this CPU (2.6: AVX-512 or AMX). Where it does
// not, bf16 matmuls widen their operands to f32 (ops/matmul/cpu.cpp): bf16's rounding at f32
// speed, so bf16 buys no speed there.
bool cpu_has_bf16_matmul();

// f32 <-> bf16 over n contiguous elements, vectorised and parallel (ops/cast/cpu.cpp). Widening
// is exact (a bf16 is the upper half of an f32); narrowing rounds to nearest even and keeps NaN
// a NaN, as float_to_bf16 and oneDNN's reorder do.
void widen_bf16(const std::uint16_t* src, float* dst, std::int64_t n);
void narrow_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n);

// The running thread's staging buffer of at least `floats` floats: where bf16 operands are
// widened to f32 (matmuls without oneDNN bf16, the fused attention) and tall transposed
// operands copied (ops/matmul/cpu.cpp). One per thread, shared by every such kernel: kernels
// parallelise with OpenMP inside, so no other kernel runs on the thread while one uses it. It
// lives outside the arena and grows to the largest request.
float* thread_staging(std::size_t floats);
// Floats to reserve in it for `elems` values, keeping the next one 64-byte aligned.
inline std::size_t staged_floats(std::int64_t elems) {
  return static_cast<std::size_t>((elems + 15) / 16 * 16);
}

// The elements from a view's first to its last (non-negative strides), gaps included: what a
// strided operand is widened over, keeping its strides.
inline std::int64_t view_span(const TensorView& v) {
  std::int64_t last = 0;
  for (int i = 0; i < v.rank; ++i) {
    if (v.dims[i] == 0) return 0;
    last += (v.dims[i] - 1) * v.strides[i];
  }
  return last + 1;
}

// A view padded with leading size-1 dims up to `rank` (oneDNN wants equal ranks to broadcast).
inline TensorView padded(const TensorView& v, int rank) {
  TensorView p = v;
  const int lead = rank - v.rank;
  if (lead <= 0) return p;
  p.rank = rank;
  for (int i = rank - 1; i >= 0; --i) {
    const int src = i - lead;
    p.dims[i] = src >= 0 ? v.dims[src] : 1;
    p.strides[i] =
        src >= 0 ? v.strides[src] : (i + 1 < rank ? p.strides[i + 1] * p.dims[i + 1] : 1);
  }
  return p;
}

}  // namespace stag

namespace stag {

// Base of own kernels: keeps the node's views and can run the op's reference kernel, which
// own kernels use to report bad data (an id out of range) with the reference's exact message.
class OwnKernel : public Kernel {
 public:
  OwnKernel(const KernelNode& n, KernelFn reference, std::string what)
      : g_(n.g),
        node_(n.node),
        in_(n.in),
        out_(n.out),
        state_(n.state),
        reference_(reference),
        what_(std::move(what)) {}
  std::string describe() const override { return what_; }

 protected:
  void run_reference() const {
    const KernelArgs a{g_, node_, in_, out_, state_};
    reference_(a);
  }
  const Attrs& attr() const { return g_.attr(node_); }
  const GraphView& g_;
  int node_;
  std::vector<TensorView> in_;
  TensorView out_;
  const RunState& state_;

 private:
  KernelFn reference_;
  std::string what_;
};

}  // namespace stag

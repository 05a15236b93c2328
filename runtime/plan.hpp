// A plan: one graph lowered for one binding of its symbols. Lowering validates the inputs,
// computes concrete shapes, decides which nodes are free views, plans memory (liveness over the
// execution order, reuse, in-place updates), creates every kernel once (oneDNN primitives or own
// kernels, the reference kernel as fallback), and builds the dependency DAG that TBB runs.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/runtime/bind.hpp>
#include <stag/runtime/device.hpp>
#include <stag/runtime/memory_plan.hpp>

namespace stag {

enum class Schedule : std::uint8_t {
  sequential,  // nodes in topological order on the calling thread; oneDNN threads inside ops
  parallel,    // a TBB flow graph runs every node whose inputs are ready
};

// Hooks around values that other processes must see before anyone reads them: the gradients of
// a data-parallel step (runtime/dist/gradient_sync.hpp). The plan calls ready(slot) right after
// the node computing slot's value runs, wait(slot) before any node reading it runs, begin() and
// finish() around each step (finish: every slot is final, for the optimizer and for readers of
// the outputs). Calls may come from several threads at once (Schedule::parallel).
struct SyncSlot {
  int node = -1;          // the output node
  int producer = -1;      // the node that computes its value (through views)
  int first_reader = -1;  // the first node of the step reading it (the graph's size: none)
  float* data = nullptr;
  std::int64_t numel = 0;
};
class StepSync {
 public:
  virtual ~StepSync() = default;
  virtual void begin() = 0;
  virtual void ready(int slot) = 0;
  virtual void wait(int slot) = 0;
  virtual void finish() = 0;
  // The group (bucket) of each slot: groups are numbered in order, a group is complete when
  // its last slot is ready, and no slot's first reader comes before its group's last producer.
  // Under Schedule::parallel the plan makes every reader of a slot depend on the producers of
  // its group and of the groups before it, so that wait() never blocks on a node not yet run.
  virtual std::vector<int> groups() const = 0;
};
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  // One per plan: `slots` are in the order their values become final (producer order).
  virtual std::unique_ptr<StepSync> make(std::vector<SyncSlot> slots) = 0;
};

struct PlanOptions {
  Schedule schedule = Schedule::sequential;
  int threads = 1;            // TBB arena size for Schedule::parallel
  bool poison_freed = false;  // debug: fill each buffer with NaN after its last use
  bool in_place = true;       // let elementwise nodes overwrite inputs that die with them
  bool profile = false;       // time every node (sequential schedule)
  // Record when each node starts and ends and which thread runs it (Plan::spans), on either
  // schedule: what SessionOptions::trace writes as a timeline.
  bool trace = false;
  bool fuse = true;       // fold bias adds, scales and activations into matmuls
  std::vector<int> keep;  // nodes whose values must survive the step (outputs, result)
  // Values handed to `sync` as they become final (f32 outputs, kept; usually the gradients).
  GradientSync* sync = nullptr;
  std::vector<int> synced;
  // Another device (runtime/device.hpp): the arena and the kernels come from it, the lowering is
  // the same; the schedule is the device's stream order, and matmul folding is off.
  DeviceBackend* device = nullptr;
  bool tf32 = false;  // device matmuls may use TF32 (off: bit-comparable f32)
  // Device steps captured once as a CUDA Graph and replayed (SessionOptions::cuda_graphs); a
  // profiled or traced step launches its kernels one by one.
  bool cuda_graphs = true;
  // Set by graph rewrites (runtime/remat.hpp). The execution order when it is not index order
  // (every node once, inputs before readers); which nodes may fold into a matmul, and which
  // permutes must be copies (empty: decided here), so that a rewritten graph folds and copies
  // exactly what the original did and every value comes from the same kernel.
  std::vector<int> exec_order;
  std::vector<char> may_fold;
  std::vector<char> copy_permute;
  // Stop after the memory plan: buffers, lifetimes and the peak, but no arena and no kernels
  // (what-if planning; the plan cannot run).
  bool memory_only = false;
  // Where the arena lives (required unless memory_only): returns at least this many bytes,
  // zero-filled when first handed out, and owns them. A Session's one arena, which its plans
  // share since only one runs at a time (runtime/session.hpp).
  std::function<std::byte*(std::size_t)> arena;
};

struct NodePlan {
  enum class Kind : std::uint8_t { dead, input, external, alias, compute };
  Kind kind = Kind::dead;
  int buffer = -1;        // arena buffer holding the value (-1: external or dead)
  bool in_place = false;  // writes over one of its inputs' buffer
  TensorView view;        // dims, strides and final data pointer
  std::unique_ptr<Kernel> kernel;
  std::string kernel_name;  // "reference", "onednn ...", "own ...", "view"
  std::vector<int> deps;    // compute nodes that must finish first (data and memory reuse)
  int folded_into = -1;     // a node folded into a matmul (kind alias): that matmul
};

// One node's run in a traced step (PlanOptions::trace): nanoseconds since the step began, and
// the worker that ran it (the TBB arena's thread index; 0 on the sequential schedule).
struct NodeSpan {
  std::int64_t start_ns = -1, end_ns = -1;  // -1: not run in the last traced step
  int lane = 0;
};

struct PlanBuffer {
  BufferReq req;  // start and end are positions in the execution order
  int producer = -1;
};

// A graph that a planner rewrite made from the session's: the same nodes at the same indices
// (some reading other inputs), new nodes after them, and the order to run them in. Shapes,
// attributes and scopes are the original graph's.
struct RewrittenGraph {
  std::vector<Node> nodes;
  std::vector<int> order;     // execution order of every node
  std::vector<int> original;  // the node of the original graph each node computes again
  GraphView view;             // the original's, with `nodes` in place of its nodes
};

// What SessionOptions::memory_budget made the planner do (runtime/remat.hpp).
struct Recompute {
  std::int64_t budget = 0;        // bytes asked for (0: none)
  std::int64_t natural_peak = 0;  // the arena without recomputation
  std::int64_t peak = 0;          // the arena with it
  std::vector<int> nodes;         // forward nodes computed again in the backward pass
  std::int64_t extra_flops = 0;   // their cost per step (estimated)
  int plans_tried = 0;            // memory plans made to choose them
  // One line per recomputed node and a summary: "recomputes 12 values (0.003 GFLOP per step):
  // arena 41.0 MiB -> 19.9 MiB (budget 20.0 MiB; 4 memory plans made to choose)".
  std::string describe(const GraphView& g) const;
};

namespace detail {
struct PlanBuilder;
}  // namespace detail

class Plan {
 public:
  Plan();  // out of line: Flow is complete only in runtime/cpu/execute.cpp
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan();

  Bindings bindings;
  // The graph the node indices refer to: the session's, or a rewrite of it (rematerialisation)
  // whose extra nodes come after the session's; `rewritten` then owns it.
  GraphView graph;
  std::shared_ptr<const RewrittenGraph> rewritten;
  Recompute recompute;
  std::vector<NodePlan> nodes;
  std::vector<PlanBuffer> buffers;
  MemoryPlan memory;
  std::vector<int> order;     // compute nodes in execution order
  std::vector<int> position;  // every node's place in the execution order
  std::int64_t arena_bytes() const { return memory.peak; }
  // Per-node seconds accumulated over profiled steps (PlanOptions::profile), by node index.
  std::vector<double> node_seconds;
  int profiled_steps = 0;
  // The last traced step (PlanOptions::trace): a span per node index, and when the step began.
  std::vector<NodeSpan> spans;
  std::chrono::steady_clock::time_point traced_at;

  // Runs one step. Exceptions from kernels propagate (the plan stays usable).
  void execute(const PlanOptions& opts);
  std::byte* arena() const {
    return arena_;
  }  // device memory when the plan has a device;
     // the session's, shared by its plans
  DeviceBackend* device() const { return device_; }
  // The plan's device state (null on the CPU): its CUDA Graph captures and replays.
  const DevicePlanState* device_state() const { return device_state_.get(); }

 private:
  friend struct detail::PlanBuilder;  // build_plan's steps (plan.cpp)
  // The TBB flow graph of Schedule::parallel (runtime/cpu/execute.cpp).
  void build_flow(int threads);
  std::byte* arena_ = nullptr;
  const RunState* state_ = nullptr;  // the session's, which the kernels read
  DeviceBackend* device_ = nullptr;  // owned by the session, which outlives its plans
  std::unique_ptr<DevicePlanState> device_state_;
  struct Flow;
  std::unique_ptr<Flow> flow_;
  std::vector<std::vector<int>> poison_after_;  // per order index: buffers to poison after it
  bool tracing_ = false;                        // this step records spans (PlanOptions::trace)
  // Runs node n's kernel, recording its span when tracing (lane: the worker running it).
  void run_node(int n, int lane);
  // PlanOptions::sync: the plan's step hooks, and by node the slots to wait for before it runs
  // and those that are final after it.
  std::unique_ptr<StepSync> sync_;
  std::vector<std::vector<int>> sync_wait_, sync_ready_;
};

// `external` holds parameters and optimizer state (and anything else that lives outside the
// arena), by node name; their data pointers are baked into the kernels.
std::unique_ptr<Plan> build_plan(const GraphView& g, const Bindings& b, const NamedArrays& external,
                                 CpuContext& ctx, const RunState& state, const PlanOptions& opts);

}  // namespace stag

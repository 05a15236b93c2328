// stag::Session runs a compile-time graph (inference or training) on the CPU or a GPU: it owns
// the parameters, binds named inputs, lowers the graph once per binding of its symbolic dims (a
// binding seen before reuses its plan) and executes it with oneDNN primitives and own kernels,
// or with the CUDA backend's kernels (SessionOptions::device).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <stag/runtime/params.hpp>
#include <stag/runtime/plan.hpp>

namespace stag {

struct SessionOptions {
  // Where the steps run. Device::cuda keeps the parameters, optimizer state and every
  // intermediate value on the GPU: inputs are copied in at each run, outputs only when asked
  // for (get, result), parameters when params() is read. A graph with a node the GPU backend
  // cannot run is refused when it is planned, with the node's name.
  Device device = Device::cpu;
  bool tf32 = false;  // Device::cuda: f32 matmuls may use TF32 tensor cores
  // Device::cuda: each plan's step is captured once as a CUDA Graph and replayed (one launch per
  // step instead of one per kernel; a step with another `training` or data-parallel row range
  // is captured once more). Off, or where a capture fails (plan().device_state() says why),
  // the kernels are launched one by one. Profiled and traced steps launch them one by one.
  bool cuda_graphs = true;
  int threads = 0;  // 0: every core the process may use
  Schedule schedule = Schedule::sequential;
  bool poison_freed = false;  // debug: NaN-fill buffers after their last use
  bool in_place = true;       // let elementwise nodes overwrite inputs that die with them
  bool fuse = true;           // fold bias adds, scales and activations into matmuls
  bool profile = false;       // time every node (runs the sequential schedule)
  // A Chrome trace-event JSON file (open it in Perfetto or chrome://tracing): the first
  // `trace_steps` runs as a timeline, one lane per worker thread, every node with its op,
  // shape, bytes, estimated GFLOP/s and kernel (runtime/trace.hpp). Rewritten after each
  // traced run, so it is complete whenever the program stops. Sessions of one process with the
  // same path write one timeline, their runs counted together. Empty: no trace.
  std::string trace = {};
  int trace_steps = 20;
  std::uint64_t seed = 0;              // parameter initialisation and dropout
  std::vector<std::string> keep = {};  // intermediate nodes to keep readable after a run
  bool keep_all = false;               // debug: keep every node readable (no memory reuse)
  std::map<std::string, std::int64_t, std::less<>> dims = {};  // symbols no input determines
  InitOverrides init_overrides = {};  // initialisers by parameter name pattern (last match wins)
  // Parameters (and optimizer state) this session uses instead of creating its own: their
  // storage is shared (Array copies share it), so sessions of one model's training and
  // evaluation graphs see the same weights without copying. Names the graph lacks are ignored;
  // a shape or dtype that differs from the graph's is a stag::Error.
  NamedArrays shared_params = {};
  // Plans (kernels and buffers for one binding of the symbolic dims) kept for reuse; beyond
  // this many the least recently used one is dropped. Data whose shapes vary widely (a
  // dim per batch) would otherwise grow memory without bound. At least 1.
  std::size_t max_plans = 64;
  // Data-parallel training: the gradients of the parameters (outputs grad/<param>) are handed
  // to this as they become final in each step, and every node reading one waits for it
  // (runtime/dist/gradient_sync.hpp: bucketed all-reduce across ranks).
  std::shared_ptr<GradientSync> gradient_sync = {};
  // The most bytes a step's arena may take (0: no limit). The arena holds every value a step
  // computes (activations, gradients, temporaries); parameters and optimizer state are
  // outside it. When the plan for a binding would need more, the planner computes some
  // forward values again in the backward pass instead of keeping them (runtime/remat.hpp),
  // with bitwise the same results; plan().recompute says which and at what cost. A budget no
  // recomputation meets is a stag::Error at the step, naming the smallest arena found.
  std::int64_t memory_budget = 0;
};

struct StepOptions {
  bool training = false;   // dropout active
  std::uint64_t step = 0;  // dropout's counter (give each training step its own)
  // Data parallelism: the inputs' `rows` rows are rows row_offset... of the global batch;
  // dropout then draws the masks one process with the whole batch would (RunState).
  std::int64_t row_offset = 0;
  std::int64_t rows = 0;
};

class TraceRecorder;

class Session {
 public:
  explicit Session(const GraphView& g, SessionOptions opts = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const GraphView& graph() const { return g_; }

  // Parameters (and optimizer state) by name. They are created from the graph's initialisers
  // as soon as their dims are known (at construction, or at the first run for symbolic ones).
  // On a device they are fetched from it when a step has run since the last fetch; change them
  // with set_param(s) there (a write into these host arrays does not reach the device).
  const NamedArrays& params() const;
  bool has_params() const { return !params_.empty() || num_params_ == 0; }
  // Copies `value` into the parameter (shapes must match); pointers held by plans stay valid.
  void set_param(std::string_view name, const Array& value);
  void set_params(const NamedArrays& values);

  // Inputs are validated (dtype, rank, dims, symbols) when the step runs.
  void set_input(std::string_view name, Array value);
  void set_inputs(const NamedArrays& values);

  void run(const StepOptions& step = {});

  // A copy of the value of an output (`grad/<param>` for gradients), the result, or a node
  // named in SessionOptions::keep, from the last run.
  Array get(std::string_view name) const;
  Array get(int node) const;  // by node index (an output, the result or a kept node)
  double result() const;
  // Zero-copy access; valid until the next run. On a device the data pointer is device memory.
  TensorView view(std::string_view name) const;
  Device device() const { return opts_.device; }

  // The plan of the last run (kernels, memory).
  const Plan& plan() const;
  std::size_t num_plans() const { return plans_.size(); }
  // The bytes of the arena the cached plans share: the largest plan's (Plan::arena_bytes).
  std::size_t arena_bytes() const { return arena_size_; }
  // One line per executed node: name, op, kernel.
  std::string describe_kernels() const;
  // With SessionOptions::profile: the slowest nodes, their kernels and mean milliseconds.
  std::string profile_report(int top = 20) const;

 private:
  int resolve(std::string_view name) const;
  void check_readable(int n, std::string_view name) const;
  void ensure_params(const Bindings& b);
  void adopt_shared_params();
  void mirror_params();  // device: every parameter has its device copy in dev_params_
  // The shared arena, grown to `bytes` if smaller (dropping the plans that point into it).
  std::byte* arena_for(std::size_t bytes);
  void free_arena();

  GraphView g_;
  SessionOptions opts_;
  // Declared before the plans, whose kernels free device memory through it.
  std::shared_ptr<DeviceBackend> device_;
  // One arena for all cached plans (only one runs at a time): every value a step computes lives
  // there, so a session whose batches take many shapes holds the largest plan's arena once, not
  // one arena per shape. A plan that needs more replaces it, and the plans that pointed into
  // the old one are dropped (planned again when their shapes come back).
  std::byte* arena_ = nullptr;
  std::size_t arena_size_ = 0;
  NamedArrays dev_params_;  // device copies of params_ (Array::wrap), by name
  mutable std::uint64_t pulled_epoch_ = 0;
  PlanOptions plan_opts_;
  std::shared_ptr<TraceRecorder> trace_;  // SessionOptions::trace (shared by path)
  CpuContext ctx_;
  RunState state_;
  NamedArrays params_;
  NamedArrays inputs_;
  int num_params_ = 0;
  struct CachedPlan {
    std::unique_ptr<Plan> plan;
    std::uint64_t last_use = 0;
  };
  std::map<Bindings, CachedPlan> plans_;
  std::uint64_t runs_ = 0;
  Plan* current_ = nullptr;
};

}  // namespace stag

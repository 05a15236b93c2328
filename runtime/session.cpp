// Session: parameter store, input binding, plan cache and step execution.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <thread>

#include <omp.h>

#include <stag/ops/registry.hpp>
#include <stag/runtime/params.hpp>
#include <stag/runtime/remat.hpp>
#include <stag/runtime/session.hpp>
#include <stag/runtime/trace.hpp>

namespace stag {
namespace {

// SessionOptions::threads for OpenMP, which oneDNN and the own kernels thread with: the
// calling thread's team size while a step plans and runs, restored afterwards. Set at planning
// too, since oneDNN sizes some primitives' work split (brgemm matmul) when it creates them.
class OmpThreads {
 public:
  explicit OmpThreads(int n) : saved_(omp_get_max_threads()) {
    if (n > 0 && n != saved_) omp_set_num_threads(n);
  }
  ~OmpThreads() {
    if (omp_get_max_threads() != saved_) omp_set_num_threads(saved_);
  }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

// Device copies of host parameter storage, shared by every session whose parameters share that
// storage (SessionOptions::shared_params: a training and an evaluation session of one model).
// The device copy is the current value once a step has run; the epoch counts device steps, so a
// session knows when its host arrays are behind.
struct Mirrors {
  std::mutex m;
  std::map<const void*, std::weak_ptr<std::byte>> by_host;
  std::atomic<std::uint64_t> epoch{1};
};
Mirrors& mirrors() {
  static Mirrors* m = new Mirrors;  // NOTE: never destroyed: sessions may outlive statics
  return *m;
}

// The bytes of view `v` (of any strides) copied into a new contiguous host array.
Array fetch(DeviceBackend& dev, const TensorView& v) {
  Array out(v.dtype, std::vector<std::int64_t>(v.dims, v.dims + v.rank));
  const auto es = static_cast<std::int64_t>(dtype_size(v.dtype));
  if (out.numel() == 0) return out;
  if (v.contiguous()) {
    dev.to_host(out.raw(), v.data, out.bytes());
    return out;
  }
  // The span the view covers (strides are never negative), then a gather on the host.
  std::int64_t last = 0;
  for (int d = 0; d < v.rank; ++d) last += (v.dims[d] - 1) * v.strides[d];
  std::vector<std::byte> span(static_cast<std::size_t>((last + 1) * es));
  dev.to_host(span.data(), v.data, span.size());
  for (std::int64_t i = 0; i < out.numel(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * es, span.data() + kernel::offset_of(v, i) * es,
                static_cast<std::size_t>(es));
  return out;
}

}  // namespace

Session::Session(const GraphView& g, SessionOptions opts) : g_(g), opts_(std::move(opts)) {
  if (opts_.device != Device::cpu) {
    // The op table first: a graph the device cannot run is refused even where it is absent.
    if (const std::string why = device_unsupported(opts_.device, g_); !why.empty())
      throw Error(why);
    device_ = device_backend(opts_.device);  // a stag::Error when the device cannot run here
    plan_opts_.device = device_.get();
    plan_opts_.tf32 = opts_.tf32;
    plan_opts_.cuda_graphs = opts_.cuda_graphs;
  }
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  ctx_.threads = opts_.threads > 0 ? opts_.threads : (hw > 0 ? hw : 1);
  plan_opts_.schedule = opts_.schedule;
  plan_opts_.threads = ctx_.threads;
  plan_opts_.poison_freed = opts_.poison_freed;
  plan_opts_.in_place = opts_.in_place;
  plan_opts_.fuse = opts_.fuse;
  plan_opts_.profile = opts_.profile;
  if (!opts_.trace.empty()) trace_ = TraceRecorder::for_path(opts_.trace);
  plan_opts_.arena = [this](std::size_t bytes) { return arena_for(bytes); };
  if (g_.result >= 0) plan_opts_.keep.push_back(g_.result);
  for (const OutputEntry& o : g_.outputs) plan_opts_.keep.push_back(o.node);
  for (const std::string& k : opts_.keep) {
    const int n = g_.find(k);
    if (n < 0) throw Error("stag::Session: keep: no node called '" + k + "'");
    plan_opts_.keep.push_back(n);
  }
  if (opts_.keep_all)
    for (int n = 0; n < g_.size(); ++n) plan_opts_.keep.push_back(n);
  if (opts_.gradient_sync) {
    plan_opts_.sync = opts_.gradient_sync.get();
    for (const OutputEntry& o : g_.outputs)
      if (o.grad_of >= 0 && (g_.node(o.grad_of).flags & kFlagParam))
        plan_opts_.synced.push_back(o.node);
  }
  state_.seed = opts_.seed;
  num_params_ = g_.count_flag(kFlagParam | kFlagState);
  // Parameters whose dims are all static (or given) can be created right away.
  check_init_overrides(g_, opts_.init_overrides);
  // A parameter with a symbolic dim that opts_.dims does not give: all are created at the
  // first run instead. Any other failure (a store too large to allocate) is the caller's error.
  if (first_unsized_param(g_, opts_.dims) < 0)
    params_ = make_params(g_, opts_.dims, opts_.seed, DType::f32, opts_.init_overrides,
                          &opts_.shared_params);  // the shared ones are not created twice
  adopt_shared_params();
}

void Session::adopt_shared_params() {
  for (const auto& [name, value] : opts_.shared_params) {
    const int n = g_.find(name);
    if (n < 0 || !(g_.node(n).flags & (kFlagParam | kFlagState))) continue;
    const DType want = g_.node(n).dtype;
    if (value.dtype() != want)
      throw Error("stag::Session: shared parameter '" + name + "' is " + value.describe() +
                  ", the graph has " + std::string(dtype_name(want)));
    auto it = params_.find(name);
    if (it != params_.end() && it->second.dims() != value.dims())
      throw Error("stag::Session: shared parameter '" + name + "' has shape " +
                  value.shape_string() + ", the graph expects " + it->second.shape_string());
    params_[name] = value;  // shares the storage
  }
  opts_.shared_params.clear();
}

Session::~Session() {
  plans_.clear();  // before the arena they point into
  current_ = nullptr;
  free_arena();
}

std::byte* Session::arena_for(std::size_t bytes) {
  if (bytes <= arena_size_) return arena_;
  plans_.clear();
  current_ = nullptr;
  free_arena();
  if (device_) {
    arena_ = static_cast<std::byte*>(device_->alloc(bytes));  // zero-filled; Error if it cannot
  } else {
    arena_ = static_cast<std::byte*>(std::aligned_alloc(64, bytes));
    if (arena_ == nullptr)
      throw Error("stag: out of memory allocating a " + std::to_string(bytes) + "-byte arena");
    std::memset(arena_, 0, bytes);
  }
  arena_size_ = bytes;
  return arena_;
}

void Session::free_arena() {
  if (arena_ == nullptr) return;
  if (device_)
    device_->free(arena_);
  else
    std::free(arena_);
  arena_ = nullptr;
  arena_size_ = 0;
}

void Session::set_param(std::string_view name, const Array& value) {
  auto it = params_.find(name);
  if (it == params_.end())
    throw Error("stag::Session: no parameter called '" + std::string(name) + "'");
  if (it->second.dims() != value.dims())
    throw Error("stag::Session: parameter '" + std::string(name) + "': expected " +
                it->second.shape_string() + ", got " + value.shape_string());
  if (device_) params();  // the host copy is current before part of it is replaced
  const Array converted = value.to(it->second.dtype());
  std::memcpy(it->second.raw(), converted.raw(), it->second.bytes());
  if (device_) {
    auto d = dev_params_.find(name);
    if (d != dev_params_.end())
      device_->to_device(d->second.raw(), converted.raw(), it->second.bytes());
    device_->synchronize();  // `converted` dies here
  }
}

const NamedArrays& Session::params() const {
  if (device_ && pulled_epoch_ != mirrors().epoch.load()) {
    for (const auto& [name, dev] : dev_params_) {
      auto h = params_.find(name);
      if (h != params_.end() && h->second.bytes() > 0)
        device_->to_host(const_cast<void*>(h->second.raw()), dev.raw(), h->second.bytes());
    }
    pulled_epoch_ = mirrors().epoch.load();
  }
  return params_;
}

void Session::mirror_params() {
  Mirrors& mr = mirrors();
  const std::lock_guard lock(mr.m);
  for (const auto& [name, host] : params_) {
    auto have = dev_params_.find(name);
    if (have != dev_params_.end() && have->second.dims() == host.dims()) continue;
    std::shared_ptr<std::byte> dev;
    if (auto it = mr.by_host.find(host.raw()); it != mr.by_host.end()) dev = it->second.lock();
    if (!dev) {
      std::shared_ptr<DeviceBackend> backend = device_;
      dev = std::shared_ptr<std::byte>(static_cast<std::byte*>(device_->alloc(host.bytes())),
                                       [backend](std::byte* p) { backend->free(p); });
      device_->to_device(dev.get(), host.raw(), host.bytes());
      mr.by_host[host.raw()] = dev;
    }
    dev_params_[name] = Array::wrap(host.dtype(), host.dims(), dev);
  }
  for (auto it = mr.by_host.begin(); it != mr.by_host.end();)
    it = it->second.expired() ? mr.by_host.erase(it) : std::next(it);
}

void Session::set_params(const NamedArrays& values) {
  for (const auto& [k, v] : values) set_param(k, v);
}

void Session::set_input(std::string_view name, Array value) {
  inputs_[std::string(name)] = std::move(value);
}
void Session::set_inputs(const NamedArrays& values) {
  for (const auto& [k, v] : values) inputs_[k] = v;
}

void Session::ensure_params(const Bindings& b) {
  if (static_cast<int>(params_.size()) >= num_params_) return;
  init_params(g_, b, params_, opts_.seed, DType::f32, opts_.init_overrides);
}

void Session::run(const StepOptions& step) {
  // 0 threads: OpenMP's own default (every core, or OMP_NUM_THREADS).
  const OmpThreads threads(opts_.threads);
  Bindings b = bind_symbols(g_, inputs_, nullptr, opts_.dims);
  ensure_params(b);
  bind_symbols(g_, inputs_, &params_, opts_.dims);  // validates parameters too
  auto it = plans_.find(b);
  if (it == plans_.end()) {
    if (plans_.size() >= std::max<std::size_t>(opts_.max_plans, 1)) {
      auto oldest = plans_.begin();
      for (auto p = plans_.begin(); p != plans_.end(); ++p)
        if (p->second.last_use < oldest->second.last_use) oldest = p;
      if (oldest->second.plan.get() == current_) current_ = nullptr;
      plans_.erase(oldest);
    }
    if (device_) mirror_params();
    const NamedArrays& external = device_ ? dev_params_ : params_;
    it = plans_
             .emplace(b, CachedPlan{opts_.memory_budget > 0
                                        ? build_plan_within(g_, b, external, ctx_, state_,
                                                            plan_opts_, opts_.memory_budget)
                                        : build_plan(g_, b, external, ctx_, state_, plan_opts_)})
             .first;
  }
  it->second.last_use = ++runs_;
  current_ = it->second.plan.get();
  for (int n = 0; n < g_.size(); ++n) {
    const NodePlan& p = current_->nodes[static_cast<std::size_t>(n)];
    if (p.kind != NodePlan::Kind::input) continue;
    const Array& a = inputs_.find(g_.name(n))->second;
    if (device_)
      device_->to_device(p.view.data, a.raw(), a.bytes());
    else
      std::memcpy(p.view.data, a.raw(), a.bytes());
  }
  state_.training = step.training;
  state_.step = step.step;
  state_.row_offset = step.row_offset;
  state_.rows = step.rows;
  if (device_) mirrors().epoch.fetch_add(1);  // after the step the device holds newer values
  plan_opts_.trace = trace_ && trace_->wants(opts_.trace_steps);
  current_->execute(plan_opts_);
  if (plan_opts_.trace) trace_->record(*current_, step.step, opts_.trace);
}

const Plan& Session::plan() const {
  if (current_ == nullptr) throw Error("stag::Session: no step has run yet");
  return *current_;
}

int Session::resolve(std::string_view name) const {
  int n = g_.output(name);
  if (n < 0) n = g_.find(name);
  if (n < 0) throw Error("stag::Session: no output or node called '" + std::string(name) + "'");
  check_readable(n, name);
  return n;
}

void Session::check_readable(int n, std::string_view name) const {
  if (current_ == nullptr) throw Error("stag::Session: no step has run yet");
  if (n < 0 || n >= g_.size()) throw Error("stag::Session: node index out of range");
  const NodePlan& p = current_->nodes[static_cast<std::size_t>(n)];
  bool kept = false;
  for (int k : plan_opts_.keep) kept = kept || k == n;
  if (!kept && p.kind != NodePlan::Kind::external && p.kind != NodePlan::Kind::input)
    throw Error("stag::Session: '" + std::string(name) +
                "' is not kept after a run; name it in SessionOptions::keep");
}

TensorView Session::view(std::string_view name) const {
  return current_->nodes[static_cast<std::size_t>(resolve(name))].view;
}

Array Session::get(std::string_view name) const {
  return get(resolve(name));
}

Array Session::get(int node) const {
  check_readable(node, g_.name(node));
  const TensorView v = current_->nodes[static_cast<std::size_t>(node)].view;
  if (device_) return fetch(*device_, v);
  Array out(v.dtype, std::vector<std::int64_t>(v.dims, v.dims + v.rank));
  const std::size_t es = dtype_size(v.dtype);
  if (v.contiguous()) {
    std::memcpy(out.raw(), v.data, out.bytes());
  } else {
    for (std::int64_t i = 0; i < v.numel(); ++i)
      std::memcpy(static_cast<char*>(out.raw()) + i * static_cast<std::int64_t>(es),
                  static_cast<const char*>(v.data) +
                      kernel::offset_of(v, i) * static_cast<std::int64_t>(es),
                  es);
  }
  return out;
}

double Session::result() const {
  if (g_.result < 0) throw Error("stag::Session: the graph has no result");
  if (device_) return fetch(*device_, plan().nodes[static_cast<std::size_t>(g_.result)].view).at(0);
  return kernel::load(plan().nodes[static_cast<std::size_t>(g_.result)].view, 0);
}

std::string Session::describe_kernels() const {
  std::ostringstream s;
  const GraphView& g = plan().graph;  // recomputed nodes are the plan's own
  for (int n : plan().order) {
    const NodePlan& p = plan().nodes[static_cast<std::size_t>(n)];
    // NOTE: asked now, not at plan time: some kernels report what the last step did (the
    // fused attention's block mask of a mask_mod).
    s << g.name(n) << "  " << op_name(g.node(n).op) << "  "
      << (p.kernel ? p.kernel->describe() : p.kernel_name) << (p.in_place ? "  (in place)" : "")
      << "\n";
  }
  return s.str();
}

}  // namespace stag

namespace stag {

std::string Session::profile_report(int top) const {
  const Plan& p = plan();
  if (p.profiled_steps == 0) return "no profiled steps (set SessionOptions::profile)\n";
  std::vector<int> order = p.order;
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return p.node_seconds[static_cast<std::size_t>(a)] >
           p.node_seconds[static_cast<std::size_t>(b)];
  });
  double total = 0;
  for (int n : p.order) total += p.node_seconds[static_cast<std::size_t>(n)];
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(3);
  s << "total " << 1e3 * total / p.profiled_steps << " ms per step over " << p.profiled_steps
    << " steps\n";
  for (int i = 0; i < top && i < static_cast<int>(order.size()); ++i) {
    const int n = order[static_cast<std::size_t>(i)];
    const double ms = 1e3 * p.node_seconds[static_cast<std::size_t>(n)] / p.profiled_steps;
    s << "  " << ms << " ms  " << p.graph.name(n) << "  " << op_name(p.graph.node(n).op) << "  "
      << p.nodes[static_cast<std::size_t>(n)].kernel_name << "\n";
  }
  return s.str();
}

}  // namespace stag

// The CPU backend's executor: runs a plan's kernels in order on the calling thread (oneDNN and
// the own kernels thread inside each op with OpenMP), or as a TBB flow graph that runs every node
// whose dependencies are done. Another backend supplies its own Plan::execute part.
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <stag/runtime/plan.hpp>

// ThreadSanitizer cannot see the ordering that libtbb (not instrumented) enforces between flow
// graph nodes, so it would report every pair of nodes joined by an edge. In a TSan build each
// node therefore tells it: a node acquires its dependencies' tokens before it runs and releases
// its own after. A race between two nodes that no edge orders (a missing dependency in the plan)
// is still reported, which is what the TSan run checks.
#if defined(__SANITIZE_THREAD__)
#define STAG_TSAN_EDGES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STAG_TSAN_EDGES 1
#endif
#endif
#ifdef STAG_TSAN_EDGES
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace stag {

namespace {
std::size_t idx(int i) {
  return static_cast<std::size_t>(i);
}
}  // namespace

// The flow graph is created inside its task arena: a TBB graph runs its nodes in the arena it
// was constructed in, which is what bounds the number of threads.
struct Plan::Flow {
  tbb::task_arena arena;
  std::unique_ptr<tbb::flow::graph> graph;
  std::unique_ptr<tbb::flow::broadcast_node<tbb::flow::continue_msg>> start;
  std::vector<std::unique_ptr<tbb::flow::continue_node<tbb::flow::continue_msg>>> nodes;
  explicit Flow(int threads) : arena(threads) {}
};

Plan::Plan() = default;

Plan::~Plan() {
  // Kernels may hold device memory of their own: they go before the device state.
  nodes.clear();
  device_state_.reset();  // the arena is the session's
}

void Plan::run_node(int n, int lane) {
  if (!tracing_) {
    nodes[idx(n)].kernel->run();
    return;
  }
  NodeSpan& s = spans[idx(n)];
  s.lane = lane;
  s.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - traced_at)
                   .count();
  nodes[idx(n)].kernel->run();
  if (device_ != nullptr) device_->synchronize();  // NOTE: so that the span is the kernel's
  s.end_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                  traced_at)
                 .count();
}

void Plan::execute(const PlanOptions& opts) {
  tracing_ = opts.trace;
  if (tracing_) {
    spans.assign(nodes.size(), NodeSpan{});
    traced_at = std::chrono::steady_clock::now();
  }
  if (device_ != nullptr) {  // the kernels enqueue on the device's stream, in order
    device_->begin_step(*device_state_, *state_);
    if (opts.profile) {
      node_seconds.resize(nodes.size(), 0.0);
      ++profiled_steps;
    }
    if (opts.profile || tracing_) {  // one by one: the times are per kernel
      for (int n : order) {
        const auto t0 = std::chrono::steady_clock::now();
        run_node(n, 0);
        if (opts.profile) {  // NOTE: waits after each node
          device_->synchronize();
          node_seconds[idx(n)] +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      }
    } else {
      const StepKey key{state_->training, state_->row_offset, state_->rows};
      device_->run_step(*device_state_, key, [&] {
        for (int n : order) nodes[idx(n)].kernel->run();
      });
    }
    device_->finish_step(*device_state_);
    return;
  }
  if (opts.schedule == Schedule::parallel && flow_ && !opts.profile) {
#ifdef STAG_TSAN_EDGES
    __tsan_release(flow_.get());  // what this thread wrote (inputs) before the nodes run
#endif
    if (sync_) sync_->begin();
    flow_->arena.execute([&] {
      flow_->start->try_put(tbb::flow::continue_msg());
      try {
        flow_->graph->wait_for_all();
      } catch (...) {
        flow_->graph->reset();
        throw;
      }
    });
#ifdef STAG_TSAN_EDGES
    __tsan_acquire(&flow_->arena);  // every node released it when done
#endif
    if (sync_) sync_->finish();
    return;
  }
  if (opts.profile) {
    node_seconds.resize(nodes.size(), 0.0);
    ++profiled_steps;
  }
  if (sync_) sync_->begin();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto n = static_cast<std::size_t>(order[i]);
    if (sync_)
      for (int slot : sync_wait_[n]) sync_->wait(slot);
    if (opts.profile) {
      const auto t0 = std::chrono::steady_clock::now();
      run_node(order[i], 0);
      node_seconds[static_cast<std::size_t>(order[i])] +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    } else {
      run_node(order[i], 0);
    }
    if (sync_)
      for (int slot : sync_ready_[n]) sync_->ready(slot);
    if (opts.poison_freed)
      for (int buf : poison_after_[i]) {
        // NOTE: 0xFF bytes are NaN in f32/f64: any read of a dead buffer poisons results.
        std::memset(arena_ + memory.offsets[static_cast<std::size_t>(buf)], 0xFF,
                    static_cast<std::size_t>(buffers[static_cast<std::size_t>(buf)].req.bytes));
      }
  }
  if (sync_) sync_->finish();
}

void Plan::build_flow(int threads) {
  const int N = static_cast<int>(nodes.size());
  auto flow = std::make_unique<Flow>(threads);
  Plan* raw = this;
  flow->arena.execute([&] {
    flow->graph = std::make_unique<tbb::flow::graph>();
    flow->start =
        std::make_unique<tbb::flow::broadcast_node<tbb::flow::continue_msg>>(*flow->graph);
    std::vector<tbb::flow::continue_node<tbb::flow::continue_msg>*> by_node(idx(N), nullptr);
    for (int n : raw->order) {
      flow->nodes.push_back(std::make_unique<tbb::flow::continue_node<tbb::flow::continue_msg>>(
          *flow->graph, [raw, n, f = flow.get()](const tbb::flow::continue_msg&) {
#ifdef STAG_TSAN_EDGES
            __tsan_acquire(f);
            for (int d : raw->nodes[static_cast<std::size_t>(n)].deps)
              __tsan_acquire(&raw->nodes[static_cast<std::size_t>(d)]);
#else
            (void)f;
#endif
            if (raw->sync_)
              for (int slot : raw->sync_wait_[static_cast<std::size_t>(n)]) raw->sync_->wait(slot);
            raw->run_node(n, tbb::this_task_arena::current_thread_index());
            if (raw->sync_)
              for (int slot : raw->sync_ready_[static_cast<std::size_t>(n)])
                raw->sync_->ready(slot);
#ifdef STAG_TSAN_EDGES
            __tsan_release(&raw->nodes[static_cast<std::size_t>(n)]);
            __tsan_release(&f->arena);
#endif
          }));
      by_node[idx(n)] = flow->nodes.back().get();
    }
    for (int n : raw->order) {
      auto* node = by_node[idx(n)];
      bool has_dep = false;
      for (int d : raw->nodes[idx(n)].deps)
        if (by_node[idx(d)]) {
          tbb::flow::make_edge(*by_node[idx(d)], *node);
          has_dep = true;
        }
      if (!has_dep) tbb::flow::make_edge(*flow->start, *node);
    }
  });
  flow_ = std::move(flow);
}

}  // namespace stag

// Lowering a graph to a plan for one binding (see plan.hpp). Executing it is the CPU backend's
// part: runtime/cpu/execute.cpp.
#include <algorithm>
#include <numeric>
#include <string>

#include <stag/ops/op_traits.hpp>
#include <stag/runtime/cpu/make_kernel.hpp>
#include <stag/runtime/plan.hpp>
#include <stag/runtime/plan_rules.hpp>

namespace stag {

namespace {

TensorView view_of(DType t, const std::vector<std::int64_t>& dims) {
  TensorView v;
  v.dtype = t;
  v.rank = static_cast<int>(dims.size());
  for (int i = 0; i < v.rank; ++i) v.dims[i] = dims[static_cast<std::size_t>(i)];
  v.set_contiguous();
  return v;
}

struct UnionFind {
  std::vector<int> parent;
  int add() {
    parent.push_back(static_cast<int>(parent.size()));
    return parent.back();
  }
  int find(int x) {
    while (parent[static_cast<std::size_t>(x)] != x)
      x = parent[static_cast<std::size_t>(x)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
    return x;
  }
};

}  // namespace

namespace detail {

// build_plan's steps, numbered as in their comments, over the state they share. Positions
// (lifetimes, in-place decisions, dependencies) are in the execution order `seq`.
struct PlanBuilder {
  PlanBuilder(const GraphView& g_, const Bindings& b_, const NamedArrays& external_,
              CpuContext& ctx_, const RunState& state_, const PlanOptions& opts_)
      : g(g_),
        b(b_),
        external(external_),
        ctx(ctx_),
        state(state_),
        opts(opts_),
        N(g_.size()),
        plan(std::make_unique<Plan>()),
        pos(plan->position) {
    plan->bindings = b;
    plan->graph = g;
  }

  std::unique_ptr<Plan> build() {
    order();
    needed_nodes();   // 1
    views();          // 2
    lifetimes();      // 3
    in_place();       // 4
    merge_buffers();  // 5
    // 6; PlanOptions::memory_only stops once the buffers are placed.
    if (!place()) return std::move(plan);
    data_dependencies();  // 7
    write_dependencies();
    reuse_dependencies();
    check_dependencies();
    kernels();  // 8
    sync();     // 9
    finish();   // 10
    return std::move(plan);
  }

  const GraphView& g;
  const Bindings& b;
  const NamedArrays& external;
  CpuContext& ctx;
  const RunState& state;
  const PlanOptions& opts;
  const int N;
  std::unique_ptr<Plan> plan;
  std::vector<int>& pos;  // plan->position: each node's place in seq
  std::vector<int> seq;   // the execution order
  // 1.
  std::vector<char> needed, kept;
  std::vector<std::vector<std::pair<int, int>>> consumers;  // (node, input index) per value
  // 2.
  std::vector<int> alias_of;              // alias nodes: the node whose bytes they view
  std::vector<int> result_of;             // nodes whose result is an input they wrote (kResultIs)
  std::vector<std::vector<PostOp>> post;  // matmul nodes: folded consumers
  std::vector<int> fused_into;            // folded nodes: their matmul
  std::vector<std::vector<int>> extra_deps;  // matmul nodes: compute inputs of folded ops
  UnionFind uf;
  std::vector<int> node_buf;  // pre-merge buffer id of each node's value
  std::vector<int> buf_node;  // the node that first produced each buffer
  // 3.
  int nb = 0;  // pre-merge buffers
  std::vector<int> last_read;
  std::vector<char> buf_kept, buf_input;
  // 4.
  std::vector<std::pair<int, int>> in_place_over;  // (node, pre-merge buffer it overwrites)
  // 7.
  std::vector<std::vector<int>> users;  // compute nodes touching each buffer

  static std::size_t idx(int i) { return static_cast<std::size_t>(i); }
  // Which inputs a consumer's kernel reads through any strides, on the plan's device.
  std::uint32_t strided_bits(OpCode op) const {
    return opts.device != nullptr ? opts.device->strided(op_id(op)) : cpu_strided(op);
  }
  // The node whose bytes a view (alias) node shows.
  int source(int n) const {
    while (plan->nodes[idx(n)].kind == NodePlan::Kind::alias) n = alias_of[idx(n)];
    return n;
  }

  void order() {
    // The execution order: index order unless a rewrite gave another (runtime/remat.hpp).
    // Lifetimes, in-place decisions and dependencies are in positions of this order.
    seq = opts.exec_order;
    if (seq.empty()) {
      seq.resize(idx(N));
      std::iota(seq.begin(), seq.end(), 0);
    }
    if (static_cast<int>(seq.size()) != N)
      throw Error("stag: internal error: an execution order of " + std::to_string(seq.size()) +
                  " nodes for a graph of " + std::to_string(N));
    // Data-parallel gradients are synced in index order (step 9): optimizer nodes stay last there.
    if (opts.sync == nullptr || opts.synced.empty()) seq = hoist_optimizer_nodes(g, seq);
    pos.assign(idx(N), -1);
    for (int i = 0; i < N; ++i) pos[idx(seq[idx(i)])] = i;
  }

  void needed_nodes() {
    // 1. Which nodes the step needs: kept values, side effects (optimizer nodes and every node
    // that writes an input in place, such as a KV-cache write), and everything they read.
    needed.assign(idx(N), 0);
    kept.assign(idx(N), 0);
    for (int k : opts.keep) needed[idx(k)] = kept[idx(k)] = 1;
    for (int n = 0; n < N; ++n)
      if ((g.node(n).flags & kFlagOptimizer) || kWrites[g.node(n).op.value]) needed[idx(n)] = 1;
    for (int i = N - 1; i >= 0; --i)
      if (const int n = seq[idx(i)]; needed[idx(n)])
        for (int k = 0; k < g.node(n).nin; ++k) needed[idx(g.node(n).in[k])] = 1;

    consumers.assign(idx(N), {});
    for (int n : seq)
      if (needed[idx(n)])
        for (int k = 0; k < g.node(n).nin; ++k) consumers[idx(g.node(n).in[k])].emplace_back(n, k);
  }

  void views() {
    // 2. Kinds, shapes and views; arena buffers for inputs and computed values.
    plan->nodes.resize(idx(N));
    alias_of.assign(idx(N), -1);
    result_of.assign(idx(N), -1);
    post.assign(idx(N), {});
    fused_into.assign(idx(N), -1);
    extra_deps.assign(idx(N), {});
    node_buf.assign(idx(N), -1);
    for (int n : seq) {
      NodePlan& p = plan->nodes[idx(n)];
      if (!needed[idx(n)]) continue;
      const Node& nd = g.node(n);
      const OpId op = op_id(nd.op);
      const std::vector<std::int64_t> dims = concrete_dims(g.shape(n), b);
      p.view = view_of(nd.dtype, dims);
      if (nd.flags & (kFlagParam | kFlagState)) {
        const std::string name = g.name(n);
        auto it = external.find(name);
        if (it == external.end())
          throw Error("stag: parameter '" + name + "' is missing from the parameter store");
        if (it->second.dims() != dims || it->second.dtype() != nd.dtype)
          throw Error("stag: parameter '" + name + "': expected " +
                      std::string(dtype_name(nd.dtype)) + " " + dims_string(dims) + ", got " +
                      it->second.describe());
        p.kind = NodePlan::Kind::external;
        p.view.data = const_cast<void*>(it->second.raw());
        p.kernel_name = "parameter";
        continue;
      }
      if (nd.flags & kFlagInput) {
        p.kind = NodePlan::Kind::input;
        node_buf[idx(n)] = uf.add();
        buf_node.push_back(n);
        p.kernel_name = "input";
        continue;
      }
      const int in0 = nd.nin > 0 ? nd.in[0] : -1;
      const NodePlan* src = in0 >= 0 ? &plan->nodes[idx(in0)] : nullptr;
      bool alias = false;
      if (is_reshape_like(op) && src->view.contiguous()) {
        alias = true;  // same bytes, new dims
      } else if (op == OpId::permute) {
        alias =
            !consumers[idx(n)].empty() && (opts.copy_permute.empty() || !opts.copy_permute[idx(n)]);
        for (const auto& [c, k] : consumers[idx(n)])
          if (kept[idx(n)] || !(strided_bits(g.node(c).op) & (1u << k))) alias = false;
        if (alias) {  // the consumer reads the input through permuted strides
          const Attrs& a = g.attr(n);
          for (int d = 0; d < p.view.rank; ++d) p.view.strides[d] = src->view.strides[a.i[d]];
        }
      }
      if (alias) {
        p.kind = NodePlan::Kind::alias;
        alias_of[idx(n)] = in0;
        node_buf[idx(n)] = node_buf[idx(in0)];
        p.kernel_name = "view";
        continue;
      }
      if (opts.fuse && opts.device == nullptr && (opts.may_fold.empty() || opts.may_fold[idx(n)])) {
        const int folded = try_fold(g, n, consumers, kept, fused_into, plan->nodes, post, pos);
        if (folded >= 0) {
          // A folded bias is read by the matmul's kernel: the matmul waits for it. (A folded
          // scale is a constant baked into the kernel; nothing reads its node.)
          const int m = fused_into[idx(n)];
          const PostOp& folded_op = post[idx(m)].back();
          if (folded_op.kind == PostOp::Kind::bias &&
              plan->nodes[idx(folded_op.node)].kind == NodePlan::Kind::compute)
            extra_deps[idx(m)].push_back(folded_op.node);
          p.kind = NodePlan::Kind::alias;
          p.folded_into = m;
          alias_of[idx(n)] = folded;
          node_buf[idx(n)] = node_buf[idx(folded)];
          p.kernel_name = "fused into " + g.name(m);
          continue;
        }
      }
      p.kind = NodePlan::Kind::compute;
      if (const int k = kResultIs[nd.op.value]; k >= 0) {
        // The result is input k after the node wrote it (cache_write returns its cache): no new
        // buffer, and its readers wait for this node by their data edge.
        const int target = nd.in[k];
        const TensorView& tv = plan->nodes[idx(target)].view;
        if (!tv.contiguous() || tv.dtype != p.view.dtype || tv.numel() != p.view.numel())
          throw Error("stag: " + g.name(n) + ": " + std::string(op_name(nd.op)) +
                      " needs a contiguous input " + std::to_string(k) +
                      " of its result's shape and dtype (a state tensor)");
        result_of[idx(n)] = target;
        node_buf[idx(n)] = node_buf[idx(target)];
        continue;
      }
      node_buf[idx(n)] = uf.add();
      buf_node.push_back(n);
    }
  }

  void lifetimes() {
    // 3. Lifetimes (first write, last read) per pre-merge buffer.
    nb = static_cast<int>(buf_node.size());
    last_read.assign(idx(nb), -1);
    buf_kept.assign(idx(nb), 0);
    buf_input.assign(idx(nb), 0);
    for (int n = 0; n < N; ++n) {
      if (node_buf[idx(n)] < 0) continue;
      const int bb = node_buf[idx(n)];
      if (kept[idx(n)]) buf_kept[idx(bb)] = 1;
      if (plan->nodes[idx(n)].kind == NodePlan::Kind::input) buf_input[idx(bb)] = 1;
      for (const auto& [c, k] : consumers[idx(n)])
        last_read[idx(bb)] = std::max(last_read[idx(bb)], pos[idx(c)]);
    }
  }

  void in_place() {
    // 4. In place: an elementwise node may overwrite an input whose buffer dies at this node.
    for (int n : seq) {
      NodePlan& p = plan->nodes[idx(n)];
      if (p.kind != NodePlan::Kind::compute) continue;
      const Node& nd = g.node(n);
      const std::uint8_t mask = opts.in_place ? kInPlace[nd.op.value] : 0;
      for (int k = 0; k < nd.nin && mask; ++k) {
        if (!(mask & (1u << k))) continue;
        const int in = nd.in[k];
        const int ib = node_buf[idx(in)];
        if (ib < 0) continue;
        const int root = uf.find(ib);
        const NodePlan& ip = plan->nodes[idx(in)];
        bool read_later = false;
        for (int bb = 0; bb < nb; ++bb)
          if (uf.find(bb) == root &&
              (last_read[idx(bb)] > pos[idx(n)] || buf_kept[idx(bb)] || buf_input[idx(bb)]))
            read_later = true;
        if (read_later || !ip.view.contiguous() || ip.view.dtype != p.view.dtype ||
            ip.view.numel() != p.view.numel())
          continue;
        uf.parent[idx(uf.find(node_buf[idx(n)]))] = root;
        p.in_place = true;
        in_place_over.emplace_back(n, ib);
        break;
      }
    }
  }

  void merge_buffers() {
    // 5. Final buffers: union of merged lifetimes; kept values live to the end.
    std::vector<int> final_id(idx(nb), -1);
    for (int bb = 0; bb < nb; ++bb) {
      const int root = uf.find(bb);
      if (final_id[idx(root)] < 0) {
        final_id[idx(root)] = static_cast<int>(plan->buffers.size());
        PlanBuffer pb;
        pb.producer = buf_node[idx(root)];
        const int at = pos[idx(buf_node[idx(root)])];
        pb.req = {plan->nodes[idx(buf_node[idx(root)])].view.numel() *
                      static_cast<std::int64_t>(
                          dtype_size(plan->nodes[idx(buf_node[idx(root)])].view.dtype)),
                  at, at};
        plan->buffers.push_back(pb);
      }
      PlanBuffer& pb = plan->buffers[idx(final_id[idx(root)])];
      final_id[idx(bb)] = final_id[idx(root)];
      pb.req.start = std::min(pb.req.start, pos[idx(buf_node[idx(bb)])]);
      pb.req.end = std::max({pb.req.end, last_read[idx(bb)], pos[idx(buf_node[idx(bb)])]});
      if (buf_kept[idx(bb)]) pb.req.end = N;
      if (buf_input[idx(bb)]) {
        pb.req.start = -1;  // inputs are copied in before the first node runs
        // On a device they also live to the end of the step: a kernel that found a bad input
        // (an id, a label, a position) is re-run on the host from them once the step is done,
        // for the CPU's message (runtime/cuda, NodeKernel::rethrow_on_host). Inputs are small.
        if (opts.device != nullptr) pb.req.end = N;
      }
    }
    for (int n = 0; n < N; ++n)
      if (node_buf[idx(n)] >= 0) plan->nodes[idx(n)].buffer = final_id[idx(node_buf[idx(n)])];
  }

  bool place() {
    // 6. Place buffers, allocate the arena, and point every view into it.
    std::vector<BufferReq> reqs;
    for (const PlanBuffer& pb : plan->buffers) reqs.push_back(pb.req);
    plan->memory = place_buffers(reqs);
    if (opts.memory_only) return false;
    const std::size_t arena_size =
        static_cast<std::size_t>((std::max<std::int64_t>(plan->memory.peak, 64) + 63) / 64 * 64);
    if (opts.device != nullptr) {
      plan->device_ = opts.device;
      plan->state_ = &state;
      plan->device_state_ = opts.device->plan_state(g, N, opts.tf32, opts.cuda_graphs);
    }
    if (!opts.arena) throw Error("stag: internal error: build_plan without PlanOptions::arena");
    plan->arena_ = opts.arena(arena_size);
    for (int n : seq) {  // a view's source is placed before it
      NodePlan& p = plan->nodes[idx(n)];
      if (p.kind == NodePlan::Kind::alias) {
        p.view.data = plan->nodes[idx(alias_of[idx(n)])].view.data;
      } else if (result_of[idx(n)] >= 0) {
        p.view.data = plan->nodes[idx(result_of[idx(n)])].view.data;
      } else if (p.buffer >= 0) {
        p.view.data = plan->arena_ + plan->memory.offsets[idx(p.buffer)];
      }
    }
    return true;
  }

  void data_dependencies() {
    // 7. Dependencies: data (through views to the computing node) and memory reuse.
    users.assign(plan->buffers.size(), {});
    for (int n = 0; n < N; ++n) {
      NodePlan& p = plan->nodes[idx(n)];
      if (p.kind != NodePlan::Kind::compute) continue;
      if (p.buffer >= 0) users[idx(p.buffer)].push_back(n);
      std::vector<int> reads(g.node(n).in, g.node(n).in + g.node(n).nin);
      reads.insert(reads.end(), extra_deps[idx(n)].begin(), extra_deps[idx(n)].end());
      for (int r : reads) {
        const int s = source(r);
        if (plan->nodes[idx(s)].kind == NodePlan::Kind::compute) p.deps.push_back(s);
        if (plan->nodes[idx(s)].buffer >= 0) users[idx(plan->nodes[idx(s)].buffer)].push_back(n);
      }
    }
  }

  void write_dependencies() {
    // A node that writes an input in place (optimizer updates) runs after its other readers.
    for (int n = 0; n < N; ++n) {
      NodePlan& p = plan->nodes[idx(n)];
      const std::uint8_t w = p.kind == NodePlan::Kind::compute ? kWrites[g.node(n).op.value] : 0;
      for (int k = 0; k < g.node(n).nin && w; ++k) {
        if (!(w & (1u << k))) continue;
        const int target = source(g.node(n).in[k]);
        for (int v = 0; v < N; ++v) {
          if (source(v) != target || plan->nodes[idx(v)].kind == NodePlan::Kind::dead) continue;
          for (const auto& [c, kk] : consumers[idx(v)])
            if (c != n && plan->nodes[idx(c)].kind == NodePlan::Kind::compute) p.deps.push_back(c);
        }
      }
    }
  }

  void reuse_dependencies() {
    if (opts.schedule != Schedule::parallel) return;
    // An in-place node runs after every other reader of the value it overwrites.
    for (const auto& [n, ib] : in_place_over)
      for (int v = 0; v < N; ++v)
        if (node_buf[idx(v)] == ib)
          for (const auto& [c, k] : consumers[idx(v)])
            if (c != n && plan->nodes[idx(c)].kind == NodePlan::Kind::compute)
              plan->nodes[idx(n)].deps.push_back(c);
    for (std::size_t x = 0; x < plan->buffers.size(); ++x)
      for (std::size_t y = 0; y < plan->buffers.size(); ++y) {
        const BufferReq &bx = plan->buffers[x].req, &by = plan->buffers[y].req;
        if (!(by.end < bx.start)) continue;
        const std::int64_t x0 = plan->memory.offsets[x],
                           x1 = x0 + std::max<std::int64_t>(bx.bytes, 1);
        const std::int64_t y0 = plan->memory.offsets[y],
                           y1 = y0 + std::max<std::int64_t>(by.bytes, 1);
        if (!(x0 < y1 && y0 < x1)) continue;
        // Everything touching y's bytes finishes before x's first writer starts.
        const int writer = plan->buffers[x].producer;
        if (plan->nodes[idx(writer)].kind != NodePlan::Kind::compute) continue;
        for (int u : users[y])
          if (u != writer) plan->nodes[idx(writer)].deps.push_back(u);
      }
  }

  void check_dependencies() {
    for (int n = 0; n < N; ++n) {
      NodePlan& p = plan->nodes[idx(n)];
      std::sort(p.deps.begin(), p.deps.end());
      p.deps.erase(std::unique(p.deps.begin(), p.deps.end()), p.deps.end());
      // A dependency on a node later in the execution order would be a cycle, and a TBB flow
      // graph with a cycle silently never runs those nodes.
      for (int d : p.deps)
        if (pos[idx(d)] >= pos[idx(n)])
          throw Error("stag: internal error: " + g.name(n) + " depends on a later node (" +
                      g.name(d) + ")");
    }
  }

  void kernels() {
    // 8. Kernels, made once per plan with final pointers.
    for (int n : seq) {
      NodePlan& p = plan->nodes[idx(n)];
      if (p.kind != NodePlan::Kind::compute) continue;
      const Node& nd = g.node(n);
      KernelNode cn{g, n, {}, p.view, ctx, state};
      for (int k = 0; k < nd.nin; ++k) cn.in.push_back(plan->nodes[idx(nd.in[k])].view);
      cn.post = post[idx(n)];
      for (PostOp& po : cn.post)
        if (po.kind == PostOp::Kind::bias) po.bias = plan->nodes[idx(po.node)].view;
      if (opts.device != nullptr) {
        p.kernel = opts.device->make_kernel(cn, *plan->device_state_);
        p.kernel_name = p.kernel->describe();
        plan->order.push_back(n);
        continue;
      }
      p.kernel = make_cpu_kernel(cn);
      p.kernel_name = p.kernel->describe();
      plan->order.push_back(n);
    }
  }

  void sync() {
    // 9. Synced values (data-parallel gradients): each is final once the node computing it has
    // run, and every node that reads it waits for the other ranks' part. Slots are numbered in
    // the order they become final. (The hooks compare node indices: nodes a rewrite adds never
    // compute or read gradients, and the others run in index order.)
    if (opts.sync != nullptr && !opts.synced.empty() && opts.device != nullptr)
      throw Error("stag: data-parallel gradients on " +
                  std::string(device_name(opts.device->device())) +
                  " need NCCL, which this stag does not build yet; train data-parallel on the CPU");
    if (opts.sync == nullptr || opts.synced.empty()) return;
    plan->sync_wait_.assign(idx(N), {});
    plan->sync_ready_.assign(idx(N), {});
    std::vector<std::pair<int, int>> sources;  // (computing node, output node), unique sources
    for (int n : opts.synced) {
      const int s = source(n);
      const NodePlan& sp = plan->nodes[idx(s)];
      if (sp.kind != NodePlan::Kind::compute || sp.view.dtype != DType::f32 ||
          !sp.view.contiguous() || !kept[idx(n)])
        throw Error("stag: " + g.name(n) +
                    " cannot be all-reduced in the step: it is not a kept, contiguous f32 value "
                    "that a node of the step computes");
      if (std::none_of(sources.begin(), sources.end(), [&](auto& p) { return p.first == s; }))
        sources.emplace_back(s, n);
    }
    std::sort(sources.begin(), sources.end(),
              [&](const auto& x, const auto& y) { return pos[idx(x.first)] < pos[idx(y.first)]; });
    std::vector<SyncSlot> slots;
    std::vector<std::vector<int>> readers;
    for (const auto& [s, n] : sources) {
      const int slot = static_cast<int>(slots.size());
      const NodePlan& sp = plan->nodes[idx(s)];
      slots.push_back({n, s, N, static_cast<float*>(sp.view.data), sp.view.numel()});
      plan->sync_ready_[idx(s)].push_back(slot);
      readers.emplace_back();
      // Readers by data (deps also hold memory-reuse edges under Schedule::parallel).
      const int src = s;  // NOTE: clang 14 cannot capture a structured binding
      auto reads = [&](int c) {
        const Node& nd = g.node(c);
        for (int k = 0; k < nd.nin; ++k)
          if (source(nd.in[k]) == src) return true;
        for (int e : extra_deps[idx(c)])
          if (source(e) == src) return true;
        return false;
      };
      for (int c : plan->order)
        if (reads(c)) {
          plan->sync_wait_[idx(c)].push_back(slot);
          readers.back().push_back(c);
          slots.back().first_reader = std::min(slots.back().first_reader, c);
        }
    }
    plan->sync_ = opts.sync->make(slots);
    if (opts.schedule == Schedule::parallel) {
      const std::vector<int> group = plan->sync_->groups();
      for (std::size_t k = 0; k < slots.size(); ++k)
        for (int c : readers[k]) {
          std::vector<int>& deps = plan->nodes[idx(c)].deps;
          for (std::size_t j = 0; j < slots.size() && group[j] <= group[k]; ++j) {
            if (pos[idx(slots[j].producer)] >= pos[idx(c)])
              throw Error("stag: internal error: gradient bucket " + std::to_string(group[k]) +
                          " is read by " + g.name(c) + " before " + g.name(slots[j].producer) +
                          " computes it");
            deps.push_back(slots[j].producer);
          }
          std::sort(deps.begin(), deps.end());
          deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        }
    }
  }

  void finish() {
    // 10. Debug poisoning lists and the TBB flow graph.
    plan->poison_after_.assign(plan->order.size(), {});
    std::vector<int> order_at(idx(N), -1);  // index in plan->order
    for (std::size_t i = 0; i < plan->order.size(); ++i)
      order_at[idx(plan->order[i])] = static_cast<int>(i);
    for (std::size_t bi = 0; bi < plan->buffers.size(); ++bi) {
      const BufferReq& r = plan->buffers[bi].req;
      if (r.end >= N) continue;
      int last = -1;
      for (int u : users[bi]) last = std::max(last, order_at[idx(u)]);
      if (last >= 0) plan->poison_after_[idx(last)].push_back(static_cast<int>(bi));
    }
    if (opts.schedule == Schedule::parallel && opts.device == nullptr)
      plan->build_flow(std::max(1, opts.threads));
  }
};

}  // namespace detail

std::unique_ptr<Plan> build_plan(const GraphView& g, const Bindings& b, const NamedArrays& external,
                                 CpuContext& ctx, const RunState& state, const PlanOptions& opts) {
  return detail::PlanBuilder(g, b, external, ctx, state, opts).build();
}

}  // namespace stag

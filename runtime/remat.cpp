// Rematerialisation under a memory budget (see remat.hpp): the graph rewrite, the cost model,
// and the search that adds recomputed values until the memory plan fits.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <sstream>

#include <stag/ops/op_traits.hpp>
#include <stag/runtime/remat.hpp>
#include <stag/runtime/trace.hpp>

namespace stag {

namespace {

constexpr auto idx = [](int i) { return static_cast<std::size_t>(i); };

bool is_forward(const Node& nd) {
  return !(nd.flags & (kFlagBackward | kFlagOptimizer | kFlagRecompute));
}
bool is_view_op(OpId op) {
  return op == OpId::reshape || op == OpId::unsqueeze || op == OpId::squeeze || op == OpId::permute;
}

std::string mib(std::int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

// The live bytes of a memory plan at each position of the execution order.
std::vector<std::int64_t> live_bytes(const Plan& p) {
  const std::size_t T = p.position.size() + 2;
  std::vector<std::int64_t> delta(T + 1, 0);
  for (const PlanBuffer& b : p.buffers) {
    const std::size_t s = idx(std::max(b.req.start, 0));
    const std::size_t e = std::min(idx(b.req.end) + 1, T);
    delta[s] += b.req.bytes;
    delta[e] -= b.req.bytes;
  }
  std::vector<std::int64_t> live(T, 0);
  std::int64_t run = 0;
  for (std::size_t t = 0; t < T; ++t) live[t] = run += delta[t];
  return live;
}

}  // namespace

std::unique_ptr<RewrittenGraph> rewrite_for_recompute(const GraphView& g,
                                                      const std::vector<char>& recompute) {
  const int N = g.size();
  auto rg = std::make_unique<RewrittenGraph>();
  rg->nodes.assign(g.nodes.begin(), g.nodes.end());
  rg->original.resize(idx(N));
  std::iota(rg->original.begin(), rg->original.end(), 0);
  // Recomputed values and the views of them: both are cloned for backward readers.
  std::vector<char> cloned(idx(N), 0);
  for (int n = 0; n < N; ++n) {
    const Node& nd = g.node(n);
    if (!is_forward(nd)) continue;
    cloned[idx(n)] =
        recompute[idx(n)] || (is_view_op(op_id(nd.op)) && nd.nin > 0 && cloned[idx(nd.in[0])]);
  }
  std::vector<int> clone_of(idx(N), -1);
  std::vector<int> pending;  // clones made for the node being placed, inputs first
  std::function<int(int)> use = [&](int v) -> int {
    if (!cloned[idx(v)]) return v;
    if (clone_of[idx(v)] >= 0) return clone_of[idx(v)];
    Node c = g.node(v);
    for (int k = 0; k < c.nin; ++k) c.in[k] = use(c.in[k]);
    c.flags = static_cast<std::uint8_t>(c.flags | kFlagRecompute);
    clone_of[idx(v)] = static_cast<int>(rg->nodes.size());
    rg->nodes.push_back(c);
    rg->original.push_back(v);
    pending.push_back(clone_of[idx(v)]);
    return clone_of[idx(v)];
  };
  for (int n = 0; n < N; ++n) {
    // NOTE: use() appends to rg->nodes, so no reference into it is held across a call.
    if (!is_forward(rg->nodes[idx(n)]))
      for (int k = 0; k < rg->nodes[idx(n)].nin; ++k) {
        const int v = use(rg->nodes[idx(n)].in[k]);
        rg->nodes[idx(n)].in[k] = v;
      }
    rg->order.insert(rg->order.end(), pending.begin(), pending.end());
    pending.clear();
    rg->order.push_back(n);
  }
  rg->view = g;
  rg->view.nodes = std::span<const Node>(rg->nodes);
  return rg;
}

std::string Recompute::describe(const GraphView& g) const {
  std::ostringstream s;
  char work[48];
  std::snprintf(work, sizeof work, "%.3f GFLOP", static_cast<double>(extra_flops) / 1e9);
  s << "recomputes " << nodes.size() << " value" << (nodes.size() == 1 ? "" : "s") << " (" << work
    << " per step): arena " << mib(natural_peak) << " -> " << mib(peak) << " (budget "
    << mib(budget) << "; " << plans_tried << " memory plans made to choose)\n";
  for (int n : nodes) s << "  " << g.name(n) << "  " << op_name(g.node(n).op) << "\n";
  return s.str();
}

std::unique_ptr<Plan> build_plan_within(const GraphView& g, const Bindings& b,
                                        const NamedArrays& external, CpuContext& ctx,
                                        const RunState& state, const PlanOptions& opts,
                                        std::int64_t budget) {
  PlanOptions what_if = opts;
  what_if.memory_only = true;
  const std::unique_ptr<Plan> natural = build_plan(g, b, external, ctx, state, what_if);
  Recompute rc;
  rc.budget = budget;
  rc.natural_peak = rc.peak = natural->memory.peak;
  rc.plans_tried = 1;
  if (natural->memory.peak <= budget) {
    auto plan = build_plan(g, b, external, ctx, state, opts);
    plan->recompute = rc;
    return plan;
  }

  const int N = g.size();
  // Folds and permute copies stay as the natural plan chose them, for the originals and their
  // clones alike. A matmul that others fold into is recomputed only with its epilogue: its
  // buffer holds the folded value.
  std::vector<char> may_fold(idx(N), 0), copy_permute(idx(N), 0), fold_target(idx(N), 0);
  for (int n = 0; n < N; ++n) {
    const NodePlan& np = natural->nodes[idx(n)];
    if (np.folded_into >= 0) {
      may_fold[idx(n)] = 1;
      fold_target[idx(np.folded_into)] = 1;
    }
    copy_permute[idx(n)] = g.node(n).op == op::permute && np.kind == NodePlan::Kind::compute;
  }
  const auto options_for = [&](const RewrittenGraph& r, PlanOptions o) {
    o.exec_order = r.order;
    o.may_fold.assign(r.nodes.size(), 0);
    o.copy_permute.assign(r.nodes.size(), 0);
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      o.may_fold[i] = may_fold[idx(r.original[i])];
      o.copy_permute[i] = copy_permute[idx(r.original[i])];
    }
    return o;
  };
  std::vector<char> kept(idx(N), 0);
  for (int k : opts.keep) kept[idx(k)] = 1;
  // The forward values backward nodes read (through views), and their last forward reader.
  std::vector<char> read_by_backward(idx(N), 0);
  std::vector<int> fwd_readers_end(idx(N), -1);  // last forward reader, by index
  for (int n = 0; n < N; ++n) {
    const Node& nd = g.node(n);
    for (int k = 0; k < nd.nin; ++k) {
      int v = nd.in[k];
      if (is_forward(nd)) {
        if (!is_view_op(op_id(nd.op))) fwd_readers_end[idx(v)] = n;
        continue;
      }
      for (;;) {
        read_by_backward[idx(v)] = 1;
        const Node& vn = g.node(v);
        if (!is_forward(vn) || !is_view_op(op_id(vn.op)) || vn.nin == 0) break;
        v = vn.in[0];
      }
    }
  }
  // A view's forward readers count for its source.
  for (int n = N - 1; n >= 0; --n) {
    const Node& nd = g.node(n);
    if (is_forward(nd) && is_view_op(op_id(nd.op)) && nd.nin > 0)
      fwd_readers_end[idx(nd.in[0])] =
          std::max(fwd_readers_end[idx(nd.in[0])], fwd_readers_end[idx(n)]);
  }
  // What computing value v again takes: v itself, or for a value folded into a matmul (a
  // bias, scale or activation epilogue) the matmul and its epilogue up to v, cloned together
  // so that the clones fold as the originals did. Empty: v cannot be recomputed.
  std::vector<std::vector<int>> unit(idx(N));
  for (int n = 0; n < N; ++n) {
    const Node& nd = g.node(n);
    const NodePlan& np = natural->nodes[idx(n)];
    if (!is_forward(nd) || (nd.flags & (kFlagInput | kFlagParam | kFlagState)) || kept[idx(n)] ||
        kWrites[nd.op.value] != 0 || kResultIs[nd.op.value] >= 0)
      continue;
    if (np.kind == NodePlan::Kind::compute && !fold_target[idx(n)]) {
      unit[idx(n)] = {n};
    } else if (const int m = np.folded_into; m >= 0 && !kept[idx(m)]) {
      unit[idx(n)] = {m};
      for (int f = m + 1; f <= n; ++f)
        if (natural->nodes[idx(f)].folded_into == m) unit[idx(n)].push_back(f);
    }
  }

  std::vector<char> chosen(idx(N), 0), banned(idx(N), 0);
  std::unique_ptr<RewrittenGraph> rg;
  std::unique_ptr<Plan> sim;
  const auto simulate = [&](const std::vector<char>& set) {
    auto r = rewrite_for_recompute(g, set);
    auto p = build_plan(r->view, b, external, ctx, state, options_for(*r, what_if));
    ++rc.plans_tried;
    return std::pair{std::move(r), std::move(p)};
  };
  const auto peak_of = [](const Plan& p) {
    const std::vector<std::int64_t> live = live_bytes(p);
    return *std::max_element(live.begin(), live.end());
  };
  std::int64_t best_peak = natural->memory.peak;
  const Plan* cur = natural.get();
  static const bool debug = std::getenv("STAG_REMAT_DEBUG") != nullptr;
  for (;;) {
    if (cur->memory.peak <= budget) break;
    // The position where the most bytes are alive, and the candidates alive there only
    // because the backward pass reads them.
    const std::vector<std::int64_t> live = live_bytes(*cur);
    const int at = static_cast<int>(std::max_element(live.begin(), live.end()) - live.begin());
    const auto alive_at = [&](int v) {
      const int bi = cur->nodes[idx(v)].buffer;
      if (bi < 0) return false;
      const BufferReq& r = cur->buffers[idx(bi)].req;
      return r.start <= at && at <= r.end;
    };
    struct Pick {
      int root;  // the value the backward pass reads
      double score;
      std::int64_t saving;
      std::vector<int> group;
    };
    std::vector<Pick> picks;
    const auto bytes_of = [&](int v) {
      const TensorView& t = cur->nodes[idx(v)].view;
      return t.numel() * static_cast<std::int64_t>(dtype_size(t.dtype));
    };
    for (int r = 0; r < N; ++r) {
      if (!read_by_backward[idx(r)] || unit[idx(r)].empty() || chosen[idx(r)] || banned[idx(r)] ||
          !alive_at(r))
        continue;
      if (fwd_readers_end[idx(r)] >= 0 && cur->position[idx(fwd_readers_end[idx(r)])] >= at)
        continue;  // still read by the forward pass at the peak
      // The group: r's unit, and the units of its computed inputs that are not alive at the
      // peak either (dead after the forward pass), recomputed with it. An input that cannot
      // be recomputed would have to stay alive across the peak, which costs its bytes.
      Pick pk{r, 0, bytes_of(r), {}};
      std::int64_t flops = 0;
      std::vector<int> stack{r};
      std::vector<char> seen(idx(N), 0);
      while (!stack.empty()) {
        const int u = stack.back();
        stack.pop_back();
        if (seen[idx(u)]) continue;
        for (int v : unit[idx(u)]) {
          seen[idx(v)] = 1;
          pk.group.push_back(v);
          flops += estimated_flops(g, *cur, v);
        }
        for (int v : unit[idx(u)]) {
          const Node& vn = g.node(v);
          for (int k = 0; k < vn.nin; ++k) {
            int i = vn.in[k];
            while (is_view_op(op_id(g.node(i).op)) && is_forward(g.node(i)) && g.node(i).nin > 0)
              i = g.node(i).in[0];
            const NodePlan& ip = cur->nodes[idx(i)];
            if (chosen[idx(i)] || seen[idx(i)] || ip.kind == NodePlan::Kind::external ||
                ip.kind == NodePlan::Kind::input || ip.buffer < 0 || alive_at(i))
              continue;
            if (!unit[idx(i)].empty() && !banned[idx(i)] && pk.group.size() < 8)
              stack.push_back(i);
            else
              pk.saving -= bytes_of(i);
          }
        }
      }
      if (pk.saving <= 0) continue;
      pk.score =
          static_cast<double>(std::max<std::int64_t>(flops, 1)) / static_cast<double>(pk.saving);
      picks.push_back(std::move(pk));
    }
    if (debug) {  // what is alive at the peak, by the node that first wrote each buffer
      std::fprintf(
          stderr, "stag remat: peak at position %d: %lld bytes alive, arena %lld, %zu candidates\n",
          at, static_cast<long long>(live[idx(at)]), static_cast<long long>(cur->memory.peak),
          picks.size());
      for (const PlanBuffer& pb : cur->buffers)
        if (pb.req.start <= at && at <= pb.req.end)
          std::fprintf(stderr, "  %10lld  [%d, %d]  %s  %s\n", static_cast<long long>(pb.req.bytes),
                       pb.req.start, pb.req.end, cur->graph.name(pb.producer).c_str(),
                       std::string(op_name(cur->graph.node(pb.producer).op)).c_str());
    }
    if (picks.empty()) break;
    std::stable_sort(picks.begin(), picks.end(), [](const Pick& x, const Pick& y) {
      return x.score != y.score ? x.score < y.score : x.saving > y.saving;
    });
    // Take the cheapest until they would free a sixteenth of the peak's bytes, then plan again:
    // the peak may move elsewhere. The steps do not depend on the budget, so every budget
    // walks the same sequence of plans and stops at the first that fits; the smallest arena
    // an error names is therefore one that a budget of its size reaches.
    const std::int64_t live_peak = live[idx(at)];
    const std::int64_t need = live_peak / 16;
    std::int64_t got = 0;
    std::vector<char> next = chosen;
    std::size_t taken = 0;
    for (const Pick& pk : picks) {
      if (got >= need) break;
      for (int v : pk.group) next[idx(v)] = 1;
      got += pk.saving;
      ++taken;
    }
    auto [r2, p2] = simulate(next);
    if (peak_of(*p2) > live_peak && taken > 1) {  // the batch made it worse: one at a time
      next = chosen;
      for (int v : picks.front().group) next[idx(v)] = 1;
      taken = 1;
      std::tie(r2, p2) = simulate(next);
    }
    if (peak_of(*p2) > live_peak) {
      banned[idx(picks.front().root)] = 1;
      continue;
    }
    chosen = std::move(next);
    rg = std::move(r2);
    sim = std::move(p2);
    cur = sim.get();
    best_peak = std::min(best_peak, cur->memory.peak);
  }
  if (cur->memory.peak > budget) {
    // A training step whose optimizer waits for every gradient (the global norm) holds them all:
    // updating in the backward pass lowers that floor.
    const bool optimizer = std::any_of(g.nodes.begin(), g.nodes.end(),
                                       [](const Node& nd) { return nd.flags & kFlagOptimizer; });
    const bool grads_held =
        optimizer && std::any_of(g.outputs.begin(), g.outputs.end(),
                                 [](const OutputEntry& o) { return o.grad_of >= 0; });
    throw Error("stag: memory budget of " + mib(budget) + " (" + std::to_string(budget) +
                " bytes) cannot be met: the smallest arena found recomputes " +
                std::to_string(std::count(chosen.begin(), chosen.end(), 1)) + " values and needs " +
                mib(best_peak) + " (" + std::to_string(best_peak) +
                " bytes; without recomputation " + mib(natural->memory.peak) +
                "). Gradients, outputs, inputs and the backward pass's own values stay; give a "
                "budget of at least " +
                std::to_string(best_peak) + " bytes, or a smaller batch" +
                (grads_held ? ", or update each parameter in the backward pass "
                              "(AdamW{.in_backward = true}) so that gradients are not all held"
                            : ""));
  }

  std::shared_ptr<const RewrittenGraph> owned = std::move(rg);
  auto plan = build_plan(owned->view, b, external, ctx, state, options_for(*owned, opts));
  plan->rewritten = owned;
  for (int n = 0; n < N; ++n)
    if (chosen[idx(n)]) rc.nodes.push_back(n);
  // The extra work: every clone, less the originals that no forward reader needs any more.
  for (int n = 0; n < plan->graph.size(); ++n) {
    const bool now = plan->nodes[idx(n)].kind == NodePlan::Kind::compute;
    if (n >= N && now) rc.extra_flops += estimated_flops(plan->graph, *plan, n);
    if (n < N && !now && natural->nodes[idx(n)].kind == NodePlan::Kind::compute)
      rc.extra_flops -= estimated_flops(g, *natural, n);
  }
  rc.peak = plan->memory.peak;
  plan->recompute = rc;
  return plan;
}

}  // namespace stag

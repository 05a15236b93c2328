// Annotations from a Session's plan and profile. Nodes the plan does not compute (dead, or
// pruned because nothing needs them) say so, so a picture never suggests they ran.
#include <algorithm>
#include <cstdio>

#include <stag/runtime/session.hpp>
#include <stag/runtime/viz/annotate.hpp>
#include <stag/runtime/viz/render.hpp>

namespace stag {

namespace {

std::size_t idx(int n) {
  return static_cast<std::size_t>(n);
}

std::int64_t node_bytes(const NodePlan& p) {
  return p.view.numel() * static_cast<std::int64_t>(dtype_size(p.view.dtype));
}

std::string at_bindings(const Session& s) {
  const std::string b = s.plan().bindings.describe(s.graph());
  return b.empty() ? std::string() : " at " + b;
}

// The line for nodes that are not computed by a kernel of their own; empty for compute nodes.
std::string non_compute_line(const GraphView& g, int n, const NodePlan& p) {
  switch (p.kind) {
    case NodePlan::Kind::dead:
      return "not computed";
    case NodePlan::Kind::external:
      return (g.node(n).flags & kFlagState) ? "optimizer state (outside the arena)"
                                            : "parameter (outside the arena)";
    default:
      return "";
  }
}

}  // namespace

DotAnnotations plan_annotations(const Session& s) {
  const Plan& plan = s.plan();
  const GraphView& g = s.graph();
  DotAnnotations a;
  a.title = "memory plan" + at_bindings(s) + ": arena " +
            bytes_text(static_cast<double>(plan.memory.peak)) + " (" +
            bytes_text(static_cast<double>(plan.memory.naive)) + " without reuse), " +
            std::to_string(plan.buffers.size()) + " buffers; lines: buffer, offset, bytes";
  std::int64_t most = 0;
  for (const NodePlan& p : plan.nodes)
    if (p.kind == NodePlan::Kind::compute || p.kind == NodePlan::Kind::input)
      most = std::max(most, node_bytes(p));
  for (int n = 0; n < g.size(); ++n) {
    const NodePlan& p = plan.nodes[idx(n)];
    if (const std::string line = non_compute_line(g, n, p); !line.empty()) {
      a.lines[n].push_back(line);
      continue;
    }
    if (p.buffer < 0) continue;
    const std::string where = "buffer " + std::to_string(p.buffer) + " at +" +
                              bytes_text(static_cast<double>(plan.memory.offsets[idx(p.buffer)]));
    if (p.kind == NodePlan::Kind::alias) {
      a.lines[n].push_back("view of " + where);
      continue;
    }
    a.lines[n].push_back(where);
    a.lines[n].push_back(bytes_text(static_cast<double>(node_bytes(p))) +
                         (p.in_place ? ", in place" : "") +
                         (p.kind == NodePlan::Kind::input ? ", input" : ""));
    a.heat[n] = most > 0 ? static_cast<double>(node_bytes(p)) / static_cast<double>(most) : 0.0;
  }
  return a;
}

DotAnnotations kernel_annotations(const Session& s) {
  const Plan& plan = s.plan();
  const GraphView& g = s.graph();
  DotAnnotations a;
  int fallbacks = 0;
  for (int n = 0; n < g.size(); ++n) {
    const NodePlan& p = plan.nodes[idx(n)];
    if (const std::string line = non_compute_line(g, n, p); !line.empty()) {
      a.lines[n].push_back(line);
      continue;
    }
    if (p.kind == NodePlan::Kind::alias) {
      a.lines[n].push_back("view (no copy)");
      continue;
    }
    if (p.kind == NodePlan::Kind::input) continue;  // copied in by the session
    // NOTE: asked now (as Session::describe_kernels does): the fused attention with a mask_mod
    // reports the last step's block mask.
    const std::string name = p.kernel ? p.kernel->describe() : p.kernel_name;
    a.lines[n].push_back(name + (p.in_place ? " (in place)" : ""));
    if (name.rfind("reference", 0) == 0) {
      a.heat[n] = 1.0;
      ++fallbacks;
    }
  }
  a.title = "kernel per node" + at_bindings(s) + "; " +
            (fallbacks == 0 ? std::string("no reference fallbacks")
                            : std::to_string(fallbacks) + " reference fallback" +
                                  (fallbacks > 1 ? "s" : "") + " (red)");
  return a;
}

DotAnnotations time_annotations(const Session& s) {
  const Plan& plan = s.plan();
  const GraphView& g = s.graph();
  if (plan.profiled_steps == 0)
    throw Error(
        "stag: time annotations need a profiled run: set SessionOptions::profile and run a step");
  const double steps = plan.profiled_steps;
  double total = 0, slowest = 0;
  for (const int n : plan.order) {
    total += plan.node_seconds[idx(n)];
    slowest = std::max(slowest, plan.node_seconds[idx(n)]);
  }
  DotAnnotations a;
  char head[160];
  std::snprintf(head, sizeof head, "mean time per node over %d profiled step%s: %.3f ms per step",
                plan.profiled_steps, plan.profiled_steps > 1 ? "s" : "", 1e3 * total / steps);
  a.title = head + at_bindings(s) + "; red: the slowest";
  for (int n = 0; n < g.size(); ++n) {
    const NodePlan& p = plan.nodes[idx(n)];
    if (const std::string line = non_compute_line(g, n, p); !line.empty()) {
      a.lines[n].push_back(line);
      continue;
    }
    if (p.kind != NodePlan::Kind::compute) continue;
    const double sec = plan.node_seconds[idx(n)];
    char line[64];
    std::snprintf(line, sizeof line, "%.3f ms, %.1f%%", 1e3 * sec / steps,
                  total > 0 ? 100.0 * sec / total : 0.0);
    a.lines[n].push_back(line);
    a.heat[n] = slowest > 0 ? sec / slowest : 0.0;
  }
  return a;
}

}  // namespace stag

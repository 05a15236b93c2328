// Rematerialisation under a memory budget: when a training step's arena would exceed
// SessionOptions::memory_budget, the planner computes some forward values again in the backward
// pass instead of keeping them from the forward pass. It rewrites the graph (the clones come
// after the session's nodes, so every index the session knows keeps its meaning), plans memory
// for the rewrite, and repeats until the arena fits. To extend the choice, change the
// candidate rules or the cost model in remat.cpp; the rewrite itself is rewrite_for_recompute.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <stag/runtime/plan.hpp>

namespace stag {

// The graph with every forward node n where recompute[n] is set computed again for the
// backward pass: backward and optimizer nodes that read n (directly or through reshape,
// squeeze, unsqueeze or permute views of it) read a clone instead, placed just before its first
// reader. A clone reads clones of its recomputed inputs and the original of the others.
std::unique_ptr<RewrittenGraph> rewrite_for_recompute(const GraphView& g,
                                                      const std::vector<char>& recompute);

// build_plan, with the arena kept at or under `budget` bytes by recomputation. Candidates are
// forward values that the backward pass reads, taken cheapest recompute per byte saved first
// (estimated FLOPs over bytes) among those alive at the plan's peak, until the memory plan
// fits. A value folded into a matmul is recomputed with the matmul. The fused attention may be
// recomputed like any value: its clone saves its own row statistics (log-sum-exp) under its own
// node, and the backward nodes then read the clone and so find them. Values kept as outputs
// and nodes with side effects are never recomputed. The values are bitwise those of the plan
// without a budget: a clone runs the kernel its original ran, and folding is limited to what the
// original plan folded. A budget no choice meets is a stag::Error naming the smallest arena found.
std::unique_ptr<Plan> build_plan_within(const GraphView& g, const Bindings& b,
                                        const NamedArrays& external, CpuContext& ctx,
                                        const RunState& state, const PlanOptions& opts,
                                        std::int64_t budget);

}  // namespace stag

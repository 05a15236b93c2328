// Two of the planner's rules (runtime/plan.cpp), apart from its steps: where optimizer nodes
// run in the execution order, and which elementwise nodes fold into the matmul before them.
#pragma once

#include <utility>
#include <vector>

#include <stag/runtime/plan.hpp>

namespace stag {

// Ops whose result is their input's bytes under new dims (a view when the input is contiguous).
inline bool is_reshape_like(OpId op) {
  return op == OpId::reshape || op == OpId::unsqueeze || op == OpId::squeeze;
}

// The execution order with every optimizer node moved up to just after the last node it must
// follow: its inputs, and the nodes before it that read a value it overwrites (a parameter read
// by the backward pass must not change under it), directly or through a view. Other nodes keep
// their order. An update that reads one gradient then runs as soon as that gradient is final,
// so its memory is reused at once (an `in_backward` optimizer, autodiff/optimizer.hpp); the
// global norm's squares read each gradient while it is still in cache. The values are the same:
// each node reads what it read before.
std::vector<int> hoist_optimizer_nodes(const GraphView& g, const std::vector<int>& seq);

// Folds node n into the matmul that produces one of its operands, when that value has no
// other reader and is not kept: `+ bias` ([N] along the last dim), `* constant`, and an
// activation. Returns the folded operand (n then aliases it), or -1.
int try_fold(const GraphView& g, int n,
             const std::vector<std::vector<std::pair<int, int>>>& consumers,
             const std::vector<char>& kept, std::vector<int>& fused_into,
             const std::vector<NodePlan>& nodes, std::vector<std::vector<PostOp>>& post,
             const std::vector<int>& pos);

}  // namespace stag

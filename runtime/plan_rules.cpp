// The planner's rules of plan_rules.hpp: optimizer nodes hoisted in the execution order, and
// bias, scale and activation folded into matmuls.
#include <algorithm>
#include <vector>

#include <stag/ops/op_traits.hpp>
#include <stag/runtime/plan_rules.hpp>

namespace stag {

// The execution order with every optimizer node moved up to just after the last node it must
// follow: its inputs, and the nodes before it that read a value it overwrites (a parameter read
// by the backward pass must not change under it), directly or through a view. Other nodes keep
// their order. An update that reads one gradient then runs as soon as that gradient is final,
// so its memory is reused at once (an `in_backward` optimizer, autodiff/optimizer.hpp); the
// global norm's squares read each gradient while it is still in cache. The values are the same:
// each node reads what it read before.
std::vector<int> hoist_optimizer_nodes(const GraphView& g, const std::vector<int>& seq) {
  const auto optimizer = [&](int n) { return (g.node(n).flags & kFlagOptimizer) != 0; };
  if (std::none_of(seq.begin(), seq.end(), optimizer)) return seq;
  const int N = g.size();
  const auto idx = [](int i) { return static_cast<std::size_t>(i); };
  std::vector<int> pos(idx(N));
  for (int i = 0; i < N; ++i) pos[idx(seq[idx(i)])] = i;
  std::vector<std::vector<int>> readers(idx(N));
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < g.node(n).nin; ++k) readers[idx(g.node(n).in[k])].push_back(n);
  const auto is_view = [&](int n) {
    const OpId op = op_id(g.node(n).op);
    return is_reshape_like(op) || op == OpId::permute;
  };
  // Inputs and parameters ("lr" and "step" come after the backward pass) go first: an input's
  // buffer is live from the start anyway, and a parameter has none in the arena.
  const auto source = [&](int n) {
    return (g.node(n).flags & (kFlagInput | kFlagParam | kFlagState)) != 0;
  };
  std::vector<int> anchor(idx(N), -1);  // optimizer nodes: the position they follow (-1: first)
  for (int n : seq) {
    if (!optimizer(n) || source(n)) continue;
    int a = -1;
    const auto after = [&](int d) {
      if (!source(d)) a = std::max(a, optimizer(d) ? anchor[idx(d)] : pos[idx(d)]);
    };
    const Node& nd = g.node(n);
    for (int k = 0; k < nd.nin; ++k) after(nd.in[k]);
    const std::uint8_t writes = kWrites[nd.op.value];
    for (int k = 0; k < nd.nin; ++k) {
      if (!(writes & (1u << k))) continue;
      std::vector<int> stack{nd.in[k]};
      while (!stack.empty()) {
        const int v = stack.back();
        stack.pop_back();
        for (int r : readers[idx(v)]) {
          if (r == n || pos[idx(r)] > pos[idx(n)]) continue;  // later readers stay later
          after(r);
          if (is_view(r)) stack.push_back(r);
        }
      }
    }
    anchor[idx(n)] = a;
  }
  std::vector<std::vector<int>> follows(idx(N) + 1);  // by anchor + 1, in the old order
  std::vector<int> out;
  out.reserve(idx(N));
  for (int n : seq)
    if (source(n))
      out.push_back(n);
    else if (optimizer(n))
      follows[idx(anchor[idx(n)] + 1)].push_back(n);
  out.insert(out.end(), follows[0].begin(), follows[0].end());
  for (int i = 0; i < N; ++i) {
    if (optimizer(seq[idx(i)]) || source(seq[idx(i)])) continue;
    out.push_back(seq[idx(i)]);
    out.insert(out.end(), follows[idx(i + 1)].begin(), follows[idx(i + 1)].end());
  }
  return out;
}

// Folds node n into the matmul that produces one of its operands, when that value has no
// other reader and is not kept: `+ bias` ([N] along the last dim), `* constant`, and an
// activation. Returns the folded operand (n then aliases it), or -1.
int try_fold(const GraphView& g, int n,
             const std::vector<std::vector<std::pair<int, int>>>& consumers,
             const std::vector<char>& kept, std::vector<int>& fused_into,
             const std::vector<NodePlan>& nodes, std::vector<std::vector<PostOp>>& post,
             const std::vector<int>& pos) {
  const Node& nd = g.node(n);
  const OpId op = op_id(nd.op);
  const bool is_act = op == OpId::relu || op == OpId::gelu || op == OpId::gelu_tanh ||
                      op == OpId::silu || op == OpId::sigmoid || op == OpId::tanh;
  if (op != OpId::add && op != OpId::mul && !is_act) return -1;
  if (nd.dtype != DType::f32) return -1;
  const auto idx = [](int i) { return static_cast<std::size_t>(i); };
  for (int k = 0; k < nd.nin; ++k) {
    const int in = nd.in[k];
    const int m = fused_into[idx(in)] >= 0 ? fused_into[idx(in)] : in;
    if (op_id(g.node(m).op) != OpId::matmul || nodes[idx(m)].kind != NodePlan::Kind::compute)
      continue;
    if (consumers[idx(in)].size() != 1 || kept[idx(in)] || kept[idx(m)]) continue;
    if (in == m && consumers[idx(m)].size() != 1) continue;
    if (nodes[idx(m)].view.dtype != DType::f32 || !(g.shape(in) == g.shape(n))) continue;
    std::vector<PostOp>& ops = post[idx(m)];
    const bool has_act = std::any_of(
        ops.begin(), ops.end(), [](const PostOp& p) { return p.kind == PostOp::Kind::eltwise; });
    const bool has_affine = std::any_of(
        ops.begin(), ops.end(), [](const PostOp& p) { return p.kind != PostOp::Kind::eltwise; });
    PostOp po;
    po.node = n;
    if (is_act) {
      if (has_act) continue;
      po.kind = PostOp::Kind::eltwise;
      po.act = op;
    } else {
      if (has_act || has_affine) continue;
      const int other = nd.in[1 - k];
      const ShapeV& os = g.shape(other);
      const Node& on = g.node(other);
      if (op == OpId::mul) {
        if (op_id(on.op) != OpId::constant || os.rank != 0) continue;
        po.kind = PostOp::Kind::scale;
        po.scale = static_cast<float>(g.attr(other).f[0]);
      } else {
        const ShapeV& ms = g.shape(m);
        if (os.rank != 1 || !(os.dims[0] == ms.dims[ms.rank - 1]) || on.dtype != DType::f32)
          continue;
        // The bias must exist when the matmul runs: a parameter, or computed before it.
        const bool external = (on.flags & (kFlagParam | kFlagState | kFlagInput)) != 0;
        if (!external && pos[static_cast<std::size_t>(other)] > pos[static_cast<std::size_t>(m)])
          continue;
        po.kind = PostOp::Kind::bias;
        po.node = other;
      }
    }
    ops.push_back(po);
    fused_into[idx(n)] = m;
    return in;
  }
  return -1;
}

}  // namespace stag

// Mixed precision as a constexpr graph pass (torch.autocast, decided at compile time): every
// f32 matmul of a model takes bf16 operands, accumulates in f32 and gives its f32 product, so
// the bias, activation, norms, softmax statistics, losses and the optimizer stay f32. Each f32
// value a matmul reads is cast once, however many matmuls read it: a weight is cast once per
// step from its f32 master copy, and the parameters, their gradients and the optimizer state
// stay f32 (the cast's gradient casts back). The fused attention op reads bf16 q, k and v (cast
// before their head-split views) and gives an f32 output.
//   constexpr auto fwd16 = stag::autocast<fwd>();                      // every matmul
//   constexpr auto dec16 = stag::autocast<fwd, stag::bf16, "dec">();   // matmuls under `dec`
//   constexpr auto step = stag::train_step<fwd16, stag::AdamW{}>();
// Scopes name a subtree (`dec` takes `dec.0.attn`, not `decoder`); a matmul is in a scope when
// it was built inside it (Scope::enter) or reads a parameter named under it. A matmul marked with
// keep_unfused(t) is left as written. The backward products read bf16 too (the incoming
// gradient is rounded once) and give f32 gradients (ops/matmul/vjp.hpp).
#pragma once

#include <vector>

#include <stag/autodiff/autodiff.hpp>
#include <stag/graph/fixed_string.hpp>
#include <stag/ops/cast/cast.hpp>
#include <stag/ops/matmul/matmul.hpp>

namespace stag {

namespace detail {
// Whether scope `sc` of `g` is `prefix` or lies under it (component-wise).
constexpr bool scope_under(const GraphView& g, int sc, std::string_view prefix) {
  char buf[256] = {};
  const int len = g.write_name(sc, {}, buf);
  if (len < 0) return false;
  const std::string_view name(buf, static_cast<std::size_t>(len));
  if (prefix.empty()) return true;
  if (name.size() < prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
  return name.size() == prefix.size() || name[prefix.size()] == '.';
}
}  // namespace detail

// Rewrites `b` in place: the matmuls and fused attentions chosen below read `to` casts of their
// f32 operands. `scopes` empty: every one. Returns the number of nodes rewritten.
constexpr int autocast_matmuls(Builder& b, DType to,
                               std::span<const std::string_view> scopes = {}) {
  if (to != DType::bf16) throw GraphError("stag::autocast: only bf16 is supported");
  const GraphView g0 = b.view();
  const int n0 = b.size();
  int count = 0;
  std::vector<int> cast_inputs(static_cast<std::size_t>(n0), 0);  // of each chosen node
  for (int n = 0; n < n0; ++n) {
    const Node& nd = b.node(n);
    if (nd.dtype != DType::f32 || (nd.flags & kFlagNoFuse)) continue;
    // A matmul's two operands; the fused attention's q, k and v (not over a cache or with
    // captured tensors), whose output and gradients then stay f32 (ops/attention/attention.hpp).
    int inputs = 0;
    if (op_id(nd.op) == OpId::matmul) inputs = 2;
    if (op_id(nd.op) == OpId::attention && b.attr(n).i[4] == 0) inputs = 3;
    if (inputs == 0) continue;
    bool f32 = true;
    for (int k = 0; k < inputs; ++k) f32 = f32 && b.dtype(nd.in[k]) == DType::f32;
    if (!f32) continue;
    // In a scope: built inside it (Scope::enter), or reading a parameter named under it (the
    // weight of a linear layer, whose matmul is built wherever the layer is called).
    bool in_scope = scopes.empty();
    for (std::string_view s : scopes) {
      in_scope = in_scope || detail::scope_under(g0, nd.scope, s);
      for (int k = 0; k < 2; ++k) {
        const Node& in = b.node(nd.in[k]);
        if (in.flags & kFlagParam) in_scope = in_scope || detail::scope_under(g0, in.scope, s);
      }
    }
    if (!in_scope) continue;
    cast_inputs[static_cast<std::size_t>(n)] = inputs;
    ++count;
  }
  if (count == 0) return 0;

  std::vector<Node> old = b.nodes;
  b.nodes.clear();
  std::vector<int> remap(static_cast<std::size_t>(n0), -1), cast_of(remap), view_of(remap);
  const auto is_view = [&](int v) {
    const OpId op = op_id(old[static_cast<std::size_t>(v)].op);
    return op == OpId::reshape || op == OpId::unsqueeze || op == OpId::squeeze ||
           op == OpId::permute;
  };
  // The bf16 value of old node `src`: a cast of it, named after it (`enc.0.attn.w_q.bf16` for
  // a weight), or of the value a chain of views starts from, with the views repeated on the
  // bf16 value (the attention's q is a head-split view of a projection: the projection is cast,
  // in one contiguous pass, and the view stays a view).
  const auto bf16_of = [&](auto& self, int src, bool through_views) -> int {
    const bool view = through_views && is_view(src) && old[static_cast<std::size_t>(src)].nin == 1;
    int& c = (view ? view_of : cast_of)[static_cast<std::size_t>(src)];
    if (c >= 0) return c;
    const Node& in = old[static_cast<std::size_t>(src)];
    Node cn = in;
    if (view) {  // the same view of the bf16 value
      cn.in[0] = self(self, in.in[0], true);
    } else {
      cn = Node{};
      cn.op = code(OpId::cast);
      cn.nin = 1;
      cn.in[0] = remap[static_cast<std::size_t>(src)];
      cn.shape = in.shape;
    }
    cn.dtype = to;
    cn.flags = 0;
    cn.grad_of = -1;
    cn.scope = in.leaf.empty() ? in.scope : b.child_scope(in.scope, in.leaf, -1);
    cn.leaf = "bf16";
    b.nodes.push_back(cn);
    return c = b.size() - 1;
  };
  for (int n = 0; n < n0; ++n) {
    Node nd = old[static_cast<std::size_t>(n)];
    const int casts = cast_inputs[static_cast<std::size_t>(n)];
    for (int k = 0; k < nd.nin; ++k) {
      const int src = nd.in[k];
      nd.in[k] = k < casts ? bf16_of(bf16_of, src, casts == 3)  // attention: through views
                           : remap[static_cast<std::size_t>(src)];
    }
    if (nd.grad_of >= 0) nd.grad_of = remap[static_cast<std::size_t>(nd.grad_of)];
    b.nodes.push_back(nd);
    remap[static_cast<std::size_t>(n)] = b.size() - 1;
  }
  for (OutputEntry& o : b.outputs) {
    o.node = remap[static_cast<std::size_t>(o.node)];
    if (o.grad_of >= 0) o.grad_of = remap[static_cast<std::size_t>(o.grad_of)];
  }
  if (b.result >= 0) b.result = remap[static_cast<std::size_t>(b.result)];
  return count;
}

// Folds the parameter casts autocast_matmuls made into the parameters: a parameter read only
// through its bf16 cast (by matmuls) and by embedding lookups becomes a bf16 parameter, its
// casts disappear, and each lookup of it gives bf16 rows that one cast widens back to f32. An
// embedding table only lookups read (untied, or learned positions) is stored in bf16 too.
// Every other parameter (norm gains, biases, one that an f32 op reads) stays f32. Returns the
// number of parameters folded.
constexpr int fold_param_casts(Builder& b) {
  const int n0 = b.size();
  const auto at = [](auto& v, int i) -> auto& {
    return v[static_cast<std::size_t>(i)];
  };
  std::vector<char> cast_read(static_cast<std::size_t>(n0), 0), lookup_read(cast_read),
      other_read(cast_read);
  const auto is_bf16_cast = [&](const Node& nd) {
    return op_id(nd.op) == OpId::cast && nd.nin == 1 && nd.dtype == DType::bf16;
  };
  for (int n = 0; n < n0; ++n) {
    const Node& nd = b.node(n);
    for (int k = 0; k < nd.nin; ++k) {
      const int src = nd.in[k];
      if (is_bf16_cast(nd))
        at(cast_read, src) = 1;
      else if (op_id(nd.op) == OpId::embedding && k == 1)
        at(lookup_read, src) = 1;
      else
        at(other_read, src) = 1;
    }
  }
  for (const OutputEntry& o : b.outputs) at(other_read, o.node) = 1;
  if (b.result >= 0) at(other_read, b.result) = 1;
  std::vector<char> fold(static_cast<std::size_t>(n0), 0);
  int count = 0;
  for (int n = 0; n < n0; ++n) {
    const Node& nd = b.node(n);
    if ((nd.flags & kFlagParam) && nd.dtype == DType::f32 &&
        (at(cast_read, n) || at(lookup_read, n)) && !at(other_read, n)) {
      at(fold, n) = 1;
      ++count;
    }
  }
  if (count == 0) return 0;

  std::vector<Node> old = b.nodes;
  b.nodes.clear();
  std::vector<int> remap(static_cast<std::size_t>(n0), -1);
  for (int n = 0; n < n0; ++n) {
    Node nd = old[static_cast<std::size_t>(n)];
    if (is_bf16_cast(nd) && at(fold, nd.in[0])) {  // the parameter is the bf16 value now
      at(remap, n) = at(remap, nd.in[0]);
      continue;
    }
    const bool lookup = op_id(nd.op) == OpId::embedding && at(fold, nd.in[1]);
    for (int k = 0; k < nd.nin; ++k) nd.in[k] = at(remap, nd.in[k]);
    if (at(fold, n) || lookup) nd.dtype = DType::bf16;
    b.nodes.push_back(nd);
    at(remap, n) = b.size() - 1;
    if (lookup) {  // bf16 rows, widened to f32 for the ops after the lookup
      Node cn{};
      cn.op = code(OpId::cast);
      cn.nin = 1;
      cn.in[0] = b.size() - 1;
      cn.shape = nd.shape;
      cn.dtype = DType::f32;
      cn.scope = nd.leaf.empty() ? nd.scope : b.child_scope(nd.scope, nd.leaf, -1);
      cn.leaf = "f32";
      b.nodes.push_back(cn);
      at(remap, n) = b.size() - 1;
    }
  }
  for (OutputEntry& o : b.outputs) o.node = at(remap, o.node);
  if (b.result >= 0) b.result = at(remap, b.result);
  return count;
}

namespace detail {
template <const auto& G, DType To, fixed_string... Scopes>
constexpr Builder build_autocast() {
  Builder b = builder_from(G.view());
  const std::string_view scopes[sizeof...(Scopes) + 1] = {Scopes.view()..., {}};
  if (autocast_matmuls(b, To, std::span<const std::string_view>(scopes, sizeof...(Scopes))) == 0)
    throw GraphError("stag::autocast: no f32 matmul to cast (in the scopes given)");
  return b;
}
}  // namespace detail

namespace detail {
template <const auto& G>
constexpr Builder build_bf16_weights() {
  Builder b = builder_from(G.view());
  if (autocast_matmuls(b, DType::bf16) == 0)
    throw GraphError("stag::bf16_weights: the model has no f32 matmul");
  if (fold_param_casts(b) == 0)
    throw GraphError(
        "stag::bf16_weights: no parameter is read only by matmuls and embedding lookups");
  return b;
}
}  // namespace detail

// For inference: autocast<G>() with the weights its bf16 matmuls read stored in bf16 (rounded
// once, when they are loaded or set, instead of at every step), so a step reads half the bytes
// of weights and a model takes half the memory. Embedding tables are stored in bf16 too (tied
// to an output layer or not); their lookups give bf16 rows, widened to f32. Norm gains, biases
// and anything else an f32 op reads stay f32. The results are those of autocast<G>() with the
// weights rounded to bf16. A bf16 parameter has no gradient: train with autocast.
template <const auto& G>
consteval auto bf16_weights() {
  return freeze_once<&detail::build_bf16_weights<G>, derived_bound(G.view(), 2)>();
}

// Model G with its matmuls (those under `Scopes`, or all) in bf16; see the top of this file.
template <const auto& G, DType To = DType::bf16, fixed_string... Scopes>
consteval auto autocast() {
  return freeze_once<&detail::build_autocast<G, To, Scopes...>, derived_bound(G.view(), 2)>();
}

}  // namespace stag

// Reverse-mode autodiff as a constexpr graph pass. From a graph whose result is a scalar loss
// it derives a training graph: the forward nodes the loss needs, the backward nodes built by
// each op's VJP (ops/<op>/vjp.hpp), and one gradient output per parameter (and per float input
// named in `wrt`). The result is again a compile-time Graph that static_assert can inspect.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stag/ops/registry.hpp>

namespace stag {

namespace detail {

// The VJP table entry of an op that has none. Reaching one at compile time stops compilation
// with the message below, and the compiler's trace names the op: g++ prints
// "throw_missing_vjp(const char*) [with stag::OpId Id = stag::OpId::<op>]", clang 14 (which
// prints no template arguments in these notes) "in call to 'missing_vjp_<op>(c)'". The message
// stays on the line of the throw, which both compilers quote. (Templates, because a constexpr
// function that always throws is ill-formed unless it is one.)
template <OpId Id>
constexpr void throw_missing_vjp([[maybe_unused]] const char* op) {
  // clang-format off
  throw GraphError("stag::grad: an op on a differentiable path has no VJP (the missing_vjp frames of this trace name it); wrap its input in stop_gradient or give the op a VJP");
  // clang-format on
}
#define STAG_X(name)                           \
  template <OpId Id = OpId::name>              \
  constexpr void missing_vjp_##name(VjpCtx&) { \
    throw_missing_vjp<Id>(#name);              \
  }
STAG_OP_LIST(STAG_X)
#undef STAG_X

// Chosen with `if constexpr` rather than by comparing kOpVjps' entries with null: under
// -fsanitize=undefined g++ 12 refuses such a function-pointer comparison in a constant
// expression, which broke the STAG_SANITIZE build.
template <OpId Id>
constexpr VjpFn vjp_or(VjpFn missing) {
  if constexpr (requires { &OpDef<Id>::vjp; })
    return &OpDef<Id>::vjp;
  else
    return missing;
}

inline constexpr std::array<VjpFn, kOpCount> kVjpOrMissing = {
#define STAG_X(name) vjp_or<OpId::name>(&missing_vjp_##name<>),
    STAG_OP_LIST(STAG_X)
#undef STAG_X
};

// The error for the first parameter stored in bf16 (an empty Text when there is none): a
// bf16_weights graph is for inference, and a gradient of a bf16 weight would be rounded to bf16
// and update a bf16 copy (AdamW's small steps vanish in its 8-bit mantissa).
inline constexpr std::string_view kBf16ParamWhy =
    "' is stored in bf16 (stag::bf16_weights graphs are for inference); train with f32 "
    "weights, or stag::autocast for bf16 matmuls with f32 master weights";
constexpr Text bf16_param_text(const GraphView& g) {
  Text t;
  for (int n = 0; n < g.size(); ++n) {
    const Node& nd = g.node(n);
    if (!(nd.flags & kFlagParam) || nd.dtype != DType::bf16) continue;
    char buf[256] = {};
    const int len = g.write_name(nd.scope, nd.leaf, buf);
    t.put("stag::grad: parameter '");
    t.put(len < 0 ? std::string_view("<long name>") : std::string_view(buf, len));
    t.put(kBf16ParamWhy);
    return t;
  }
  return t;
}

// The parameter's name as a type clang prints (show::name<'t', 'o', 'k', ...>): the part of
// the text between its first two quotes.
template <Text T>
constexpr int quoted_start() {
  int i = 0;
  while (i < T.n && T.c[i] != '\'') ++i;
  return i + 1;
}
template <Text T>
constexpr int quoted_length() {
  int i = quoted_start<T>();
  while (i < T.n && T.c[i] != '\'') ++i;
  return i - quoted_start<T>();
}
template <Text T, std::size_t... I>
show::name<T.c[quoted_start<T>() + static_cast<int>(I)]...> quoted_name(std::index_sequence<I...>);

// One compile error naming the parameter (the text above: g++ prints it in the type of the
// incomplete shape_error; clang prints the static_assert's message and the name as a type).
template <Text T>
struct bf16_param_report {
#if defined(__clang__)
  static_assert(
      ::stag::shape_check<false,
                          decltype(quoted_name<T>(std::make_index_sequence<quoted_length<T>()>{}))>,
      "stag::grad: a parameter is stored in bf16 (stag::bf16_weights graphs are for "
      "inference); train with f32 weights, or stag::autocast for bf16 matmuls with f32 master "
      "weights");
  static constexpr std::size_t size = 1;
#else
  static constexpr std::size_t size = sizeof(shape_error<as_message<T>()>);
#endif
};

constexpr Builder builder_from(const GraphView& g) {
  Builder b;
  b.reserve(derived_bound(g, 6));  // room for a training graph (see Builder::reserve)
  b.nodes.assign(g.nodes.begin(), g.nodes.end());
  b.shapes.assign(g.shapes.begin(), g.shapes.end());
  b.attrs.assign(g.attrs.begin(), g.attrs.end());
  b.scopes.assign(g.scopes.begin(), g.scopes.end());
  b.syms.assign(g.syms.begin(), g.syms.end());
  b.dim_names.assign(g.dim_names.begin(), g.dim_names.end());
  b.outputs.assign(g.outputs.begin(), g.outputs.end());
  b.result = g.result;
  return b;
}

}  // namespace detail

// Appends the backward pass of `b`'s result to `b`. Returns the number of nodes before it.
// `wrt_inputs`: names of float inputs that also receive gradient outputs.
constexpr int append_backward(Builder& b, std::span<const std::string_view> wrt_inputs = {}) {
  const int loss = b.result;
  if (loss < 0) throw GraphError("stag::grad: the model function must return the loss tensor");
  if (b.shape(loss).rank != 0 || !is_float(b.dtype(loss)))
    throw GraphError("stag::grad: the loss must be a floating point scalar (shape [])");
  const int n_fwd = b.size();
  const GraphView fv = b.view();
  if (const detail::Text bad = detail::bf16_param_text(fv); bad.n > 0)
    throw GraphError(std::string(bad.c, static_cast<std::size_t>(bad.n)));

  // snippet-begin: docs-autodiff-1
  // Which nodes carry gradient: parameters, requested inputs, and float nodes fed by them.
  // (vector<char>, not vector<bool>: clang 14 cannot evaluate libstdc++'s vector<bool> in a
  // constant expression.)
  std::vector<char> wants(static_cast<std::size_t>(n_fwd), false);
  for (int n = 0; n < n_fwd; ++n) {
    const Node& nd = b.node(n);
    if (nd.flags & kFlagParam) {
      wants[static_cast<std::size_t>(n)] = true;
      continue;
    }
    if (nd.flags & kFlagInput) {
      for (std::string_view w : wrt_inputs)
        if (fv.name_equals(n, w)) {
          if (!is_float(nd.dtype))
            throw GraphError("stag::grad: a wrt input is not floating point");
          wants[static_cast<std::size_t>(n)] = true;
        }
      continue;
    }
    if (!is_float(nd.dtype)) continue;
    const OpInfo& info = op_info(nd.op);
    for (int k = 0; k < nd.nin; ++k)
      if (!(info.no_grad & (1u << k)) && wants[static_cast<std::size_t>(nd.in[k])])
        wants[static_cast<std::size_t>(n)] = true;
  }
  // snippet-end: docs-autodiff-1

  // snippet-begin: docs-autodiff-2
  // Walk backwards from the loss, accumulating each node's gradient.
  std::vector<int> grad(static_cast<std::size_t>(n_fwd), -1);
  b.stamp_flags = kFlagBackward;
  b.stamp_grad_of = loss;
  b.current_scope = b.node(loss).scope;
  grad[static_cast<std::size_t>(loss)] = full(b, ShapeV{}, 1.0, b.dtype(loss)).id;
  for (int n = loss; n >= 0; --n) {
    const int gn = grad[static_cast<std::size_t>(n)];
    if (gn < 0 || !wants[static_cast<std::size_t>(n)]) continue;
    const Node nd = b.node(n);
    if (nd.flags & (kFlagParam | kFlagInput)) continue;
    b.stamp_grad_of = n;
    b.current_scope = nd.scope;
    VjpCtx c{&b, n, gn, {}};
    detail::kVjpOrMissing[nd.op.value](c);
    const OpInfo& info = op_info(nd.op);
    for (int k = 0; k < nd.nin; ++k) {
      const int in = nd.in[k];
      if ((info.no_grad & (1u << k)) || !wants[static_cast<std::size_t>(in)] || !c.grads[k].valid())
        continue;
      const Ref gk = c.grads[k];
      if (!(gk.shape() == b.shape(in)))
        throw GraphError(
            "stag::grad: a VJP produced a gradient whose shape differs from its input's");
      b.stamp_grad_of = in;
      b.current_scope = b.node(in).scope;
      int& acc = grad[static_cast<std::size_t>(in)];
      if (acc < 0) {
        acc = gk.id;
      } else if (gk.dtype() == DType::bf16) {
        // A bf16 value read by several ops (two casts to f32, say): its bf16 gradients add
        // up in f32, which every VJP of a bf16 value accepts.
        acc = add(cast(Ref{&b, acc}, DType::f32), cast(gk, DType::f32)).id;
      } else {
        acc = add(Ref{&b, acc}, gk).id;  // fan-out: gradients add up
      }
    }
  }
  // snippet-end: docs-autodiff-2

  // One gradient output per parameter and requested input; zeros where the loss ignores it.
  for (int n = 0; n < n_fwd; ++n) {
    const Node& nd = b.node(n);
    if (!wants[static_cast<std::size_t>(n)] || !(nd.flags & (kFlagParam | kFlagInput))) continue;
    int g = grad[static_cast<std::size_t>(n)];
    if (g < 0) {
      b.stamp_grad_of = n;
      b.current_scope = nd.scope;
      g = full(b, b.shape(n), 0.0, nd.dtype).id;
    }
    // The gradient takes its parameter's name (`grad/enc.0.attn.w_q`), unless it already
    // belongs to another parameter (two parameters whose gradients are the same node).
    Node& gnode = b.nodes[static_cast<std::size_t>(g)];
    const bool claimed =
        gnode.grad_of >= 0 && (b.node(gnode.grad_of).flags & (kFlagParam | kFlagInput));
    if ((gnode.flags & kFlagBackward) && !claimed) {
      gnode.grad_of = n;
      gnode.scope = nd.scope;
      gnode.leaf = nd.leaf;
    }
    b.add_output(g, {}, n);
  }
  b.stamp_flags = 0;
  b.stamp_grad_of = -1;
  b.current_scope = 0;
  return n_fwd;
}

// Removes nodes that neither the result nor any output needs (inputs and parameters stay, so
// a training graph binds exactly like its model). Node indices are renumbered.
constexpr void prune(Builder& b) {
  const int n = b.size();
  std::vector<char> live(static_cast<std::size_t>(n), false);  // not vector<bool>: see above
  if (b.result >= 0) live[static_cast<std::size_t>(b.result)] = true;
  for (const OutputEntry& o : b.outputs) live[static_cast<std::size_t>(o.node)] = true;
  {
    char* lv = live.data();
    const Node* nodes = b.nodes.data();
    for (int i = n - 1; i >= 0; --i) {
      const Node& nd = nodes[i];
      // Inputs and parameters stay (binding is unchanged); optimizer nodes have side effects.
      if (nd.flags & (kFlagInput | kFlagParam | kFlagState | kFlagOptimizer)) lv[i] = true;
      if (!lv[i]) continue;
      for (int k = 0; k < nd.nin; ++k) lv[nd.in[k]] = true;
    }
  }
  std::vector<int> remap(static_cast<std::size_t>(n), -1);
  // NOTE: raw pointers, not operator[] (compile memory: see Builder::intern_shape).
  const char* lv = live.data();
  int* rm = remap.data();
  Node* nodes = b.nodes.data();
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (!lv[i]) continue;
    rm[i] = m;
    Node& to = nodes[m++];
    if (&to != &nodes[i]) to = nodes[i];
    for (int k = 0; k < to.nin; ++k) to.in[k] = rm[to.in[k]];
  }
  b.nodes.resize(static_cast<std::size_t>(m));
  for (int i = 0; i < m; ++i)
    if (nodes[i].grad_of >= 0) nodes[i].grad_of = rm[nodes[i].grad_of];
  for (OutputEntry& o : b.outputs) {
    o.node = remap[static_cast<std::size_t>(o.node)];
    if (o.grad_of >= 0) o.grad_of = remap[static_cast<std::size_t>(o.grad_of)];
  }
  if (b.result >= 0) b.result = remap[static_cast<std::size_t>(b.result)];
}

namespace detail {
template <const auto& G, fixed_string... Wrt>
constexpr Builder build_grad() {
  Builder b = builder_from(G.view());
  const std::string_view wrt[sizeof...(Wrt) + 1] = {Wrt.view()..., {}};
  append_backward(b, std::span<const std::string_view>(wrt, sizeof...(Wrt)));
  prune(b);
  return b;
}
}  // namespace detail

// The training graph of model G (a namespace-scope constexpr Graph whose result is the loss):
//   constexpr auto train = stag::grad<model>();           // gradients of every parameter
//   constexpr auto chk = stag::grad<model, "x">();        // ... and of float input "x"
// Gradients are outputs named `grad/<parameter name>`.
template <const auto& G, fixed_string... Wrt>
consteval auto grad() {
  // A bf16 parameter is one error that names it; the model itself is returned, not built into
  // a training graph, so that the lines using the result do not fail too.
  constexpr detail::Text bad = detail::bf16_param_text(G.view());
  if constexpr (bad.n > 0)
    return (void)detail::bf16_param_report<bad>::size, G;
  else
    return freeze_once<&detail::build_grad<G, Wrt...>, derived_bound(G.view(), 6)>();
}

}  // namespace stag

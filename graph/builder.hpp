// The graph builder: model functions append nodes to it while the compiler evaluates them.
// `stag::model(fn)` runs fn twice at compile time (once to size the arrays, once to fill them)
// and returns a Graph: a constant whose nodes, shapes and names static_assert can inspect.
#pragma once

#include <array>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include <stag/graph/graph_view.hpp>

namespace stag {

// Thrown during graph building. At compile time a throw stops evaluation and the compiler
// prints the offending line, so each throw site carries its message as a literal.
struct GraphError : std::logic_error {
  using std::logic_error::logic_error;
};

class Builder;

// A position in the name hierarchy: `g / "enc" / 3 / "attn"`. Creating parameters through a
// scope names them; `enter()` makes intermediate nodes land in the scope too.
struct Scope {
  Builder* b = nullptr;
  std::int32_t id = 0;

  constexpr Scope operator/(std::string_view word) const;
  constexpr Scope operator/(int index) const;
  constexpr auto enter() const;
};

// Restores the builder's current scope when it goes out of scope (usable in constexpr code).
class ScopeGuard {
 public:
  constexpr ScopeGuard(Builder* b, std::int32_t scope);
  constexpr ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  Builder* b_;
  std::int32_t saved_;
};

struct GraphSizes {
  std::size_t nodes = 0, shapes = 0, attrs = 0, scopes = 0, syms = 0, outputs = 0, dim_names = 0;
};

template <GraphSizes Z>
struct Graph;

class Builder {
 public:
  std::vector<Node> nodes;
  std::vector<ShapeV> shapes;
  std::vector<Attrs> attrs;
  std::vector<ScopeEntry> scopes;
  std::vector<SymEntry> syms;
  std::vector<OutputEntry> outputs;
  std::vector<SymEntry> dim_names;  // named static dims (`heads`), for printing only
  std::int32_t result = -1;
  std::int32_t current_scope = 0;
  // Set by graph passes: flags and `grad_of` stamped on every node they create.
  std::uint8_t stamp_flags = 0;
  std::int32_t stamp_grad_of = -1;
  // The compile-time fusion pass (ops/attention/fuse.hpp) runs when the model function has
  // returned: softmax(q k^T * scale (+ bias), keep) (dropout) @ v becomes one attention op.
  // A model function opts out with `g.fuse_attention = false;` (or keep_unfused(t) per node).
  bool fuse_attention = true;

  constexpr Builder() { scopes.push_back(ScopeEntry{}); }

  constexpr GraphView view() const {
    return GraphView{nodes, shapes, attrs, scopes, syms, outputs, result, dim_names};
  }
  constexpr const Node& node(int n) const { return nodes[static_cast<std::size_t>(n)]; }
  constexpr const ShapeV& shape(int n) const {
    return shapes[static_cast<std::size_t>(node(n).shape)];
  }
  constexpr DType dtype(int n) const { return node(n).dtype; }
  constexpr const Attrs& attr(int n) const { return view().attr(n); }
  constexpr int size() const { return static_cast<int>(nodes.size()); }

  constexpr int intern_shape(const ShapeV& s) {
    // Recent shapes are the likeliest matches; graphs hold a few dozen distinct shapes.
    for (int i = static_cast<int>(shapes.size()) - 1; i >= 0; --i)
      if (identical(shapes[static_cast<std::size_t>(i)], s)) return i;
    shapes.push_back(s);
    return static_cast<int>(shapes.size()) - 1;
  }

  // Appends a node. The shape comes from the op's rule (ops/), the builder only stores it.
  constexpr int add(OpCode op, std::span<const int> in, const ShapeV& shape, DType dtype,
                    const Attrs* a = nullptr, std::string_view leaf = {}, std::uint8_t flags = 0) {
    if (in.size() > kMaxInputs) throw GraphError("stag: a node has at most 8 inputs");
    Node n;
    n.op = op;
    n.dtype = dtype;
    n.nin = static_cast<std::uint8_t>(in.size());
    int k = 0;
    for (int i : in) {
      if (i < 0 || i >= size()) throw GraphError("stag: node input refers to a missing node");
      n.in[k++] = i;
    }
    n.shape = intern_shape(shape);
    if (a != nullptr) {
      attrs.push_back(*a);
      n.attr = static_cast<std::int32_t>(attrs.size()) - 1;
    }
    n.scope = current_scope;
    n.leaf = leaf;
    n.flags = static_cast<std::uint8_t>(flags | stamp_flags);
    n.grad_of = stamp_grad_of;
    nodes.push_back(n);
    return size() - 1;
  }

  constexpr int add(OpCode op, std::initializer_list<int> in, const ShapeV& shape, DType dtype,
                    const Attrs* a = nullptr, std::string_view leaf = {}, std::uint8_t flags = 0) {
    return add(op, std::span<const int>(in.begin(), in.size()), shape, dtype, a, leaf, flags);
  }

  constexpr void set_leaf(int n, std::string_view leaf) {
    nodes[static_cast<std::size_t>(n)].leaf = leaf;
  }

  constexpr std::int32_t child_scope(std::int32_t parent, std::string_view word,
                                     std::int32_t index) {
    for (std::size_t i = 1; i < scopes.size(); ++i) {
      const ScopeEntry& e = scopes[i];
      if (e.parent == parent && e.index == index && e.word == word)
        return static_cast<std::int32_t>(i);
    }
    scopes.push_back(ScopeEntry{parent, word, index});
    return static_cast<std::int32_t>(scopes.size()) - 1;
  }

  constexpr void add_sym(SymId id, std::string_view name) {
    for (const SymEntry& s : syms) {
      if (s.id != id) continue;
      if (s.name != name)
        throw GraphError("stag: two symbol names hash to the same id; rename one");
      return;
    }
    syms.push_back(SymEntry{id, name});
  }

  constexpr void add_dim_name(SymId id, std::string_view name) {
    for (const SymEntry& s : dim_names) {
      if (s.id != id) continue;
      if (s.name != name) throw GraphError("stag: two dim names hash to the same id; rename one");
      return;
    }
    dim_names.push_back(SymEntry{id, name});
  }

  constexpr void add_output(int node, std::string_view name, int grad_of = -1) {
    for (const OutputEntry& o : outputs)
      if (grad_of < 0 && o.grad_of < 0 && o.name == name)
        throw GraphError("stag: two graph outputs have the same name");
    outputs.push_back(OutputEntry{node, name, grad_of});
  }

  constexpr Scope root() { return Scope{this, 0}; }
  constexpr Scope operator/(std::string_view word) { return root() / word; }
  constexpr Scope operator/(int index) { return root() / index; }

  // Checks made once the model function has returned: unique input and parameter names.
  constexpr void finish() const {
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Node& a = nodes[i];
      if (!(a.flags & (kFlagInput | kFlagParam))) continue;
      for (std::size_t j = i + 1; j < nodes.size(); ++j) {
        const Node& b = nodes[j];
        if ((b.flags & (kFlagInput | kFlagParam)) && a.scope == b.scope && a.leaf == b.leaf)
          throw GraphError("stag: two inputs or parameters have the same name; scope them apart");
      }
    }
  }

  constexpr GraphSizes sizes() const {
    return {nodes.size(), shapes.size(),  attrs.size(),    scopes.size(),
            syms.size(),  outputs.size(), dim_names.size()};
  }

  template <GraphSizes Z>
  constexpr Graph<Z> freeze() const;
};

constexpr Scope Scope::operator/(std::string_view word) const {
  return Scope{b, b->child_scope(id, word, -1)};
}
constexpr Scope Scope::operator/(int index) const {
  return Scope{b, b->child_scope(id, {}, index)};
}

constexpr ScopeGuard::ScopeGuard(Builder* b, std::int32_t scope) : b_(b), saved_(b->current_scope) {
  b_->current_scope = scope;
}
constexpr ScopeGuard::~ScopeGuard() {
  b_->current_scope = saved_;
}

constexpr auto Scope::enter() const {
  return ScopeGuard(b, id);
}

// A finished graph: fixed-size arrays, usable in constant expressions and at run time.
template <GraphSizes Z>
struct Graph {
  std::array<Node, Z.nodes> nodes{};
  std::array<ShapeV, Z.shapes> shapes{};
  std::array<Attrs, Z.attrs> attrs{};
  std::array<ScopeEntry, Z.scopes> scopes{};
  std::array<SymEntry, Z.syms> syms{};
  std::array<OutputEntry, Z.outputs> outputs{};
  std::int32_t result = -1;
  std::array<SymEntry, Z.dim_names> dim_names{};

  constexpr GraphView view() const {
    return GraphView{nodes, shapes, attrs, scopes, syms, outputs, result, dim_names};
  }
  constexpr operator GraphView() const { return view(); }  // NOLINT: graphs are views.

  constexpr int size() const { return static_cast<int>(Z.nodes); }
  constexpr int count(OpCode op) const { return view().count(op); }
  constexpr int find(std::string_view name) const { return view().find(name); }
  constexpr int output(std::string_view name) const { return view().output(name); }
  constexpr const ShapeV& shape(int n) const { return view().shape(n); }
  // The shape of the node called `name`; an unknown name stops compilation.
  constexpr const ShapeV& shape(std::string_view name) const {
    const int n = find(name);
    if (n < 0) throw GraphError("stag: no node of that name in the graph");
    return shape(n);
  }
  constexpr int num_params() const { return view().count_flag(kFlagParam); }
  constexpr int num_inputs() const { return view().count_flag(kFlagInput); }
};

template <GraphSizes Z>
constexpr Graph<Z> Builder::freeze() const {
  Graph<Z> g;
  for (std::size_t i = 0; i < Z.nodes; ++i) g.nodes[i] = nodes[i];
  for (std::size_t i = 0; i < Z.shapes; ++i) g.shapes[i] = shapes[i];
  for (std::size_t i = 0; i < Z.attrs; ++i) g.attrs[i] = attrs[i];
  for (std::size_t i = 0; i < Z.scopes; ++i) g.scopes[i] = scopes[i];
  for (std::size_t i = 0; i < Z.syms; ++i) g.syms[i] = syms[i];
  for (std::size_t i = 0; i < Z.outputs; ++i) g.outputs[i] = outputs[i];
  for (std::size_t i = 0; i < Z.dim_names; ++i) g.dim_names[i] = dim_names[i];
  g.result = result;
  return g;
}

// The graph passes `stag::model` runs on a finished model function: found by argument-dependent
// lookup when the model is built, so the ops layer adds them (ops/attention/fuse.hpp, included
// with softmax, whose chain it rewrites) without the graph layer knowing the ops. This fallback
// runs none.
template <class F>
struct PassTag {};
template <class Tag>
constexpr void graph_passes(Builder&, Tag) {}

namespace detail {
template <class F>
constexpr void run_model(Builder& b) {
  if constexpr (std::is_void_v<decltype(F{}(b))>) {
    F{}(b);
  } else {
    b.result = F{}(b).id;
  }
  graph_passes(b, PassTag<F>{});
  b.finish();
}
}  // namespace detail

namespace detail {
template <class F>
constexpr GraphSizes model_sizes() {
  Builder b;
  run_model<F>(b);
  return b.sizes();
}
template <class F, GraphSizes Z>
consteval Graph<Z> build_model() {
  Builder b;
  b.nodes.reserve(Z.nodes);
  run_model<F>(b);
  return b.freeze<Z>();
}
}  // namespace detail

// Builds a model graph at compile time. `fn` is a captureless lambda `(stag::Builder&) -> T`;
// if it returns a tensor, that node is the graph's result (the loss, for training graphs).
// A GraphError thrown while building shows the throw's message once: the second pass is a
// separate template, so a failed first pass does not cascade into errors about Graph<error>.
template <class F>
consteval auto model(F) {
#if defined(__clang__)
  // clang says why a constant failed only when it initialises a named variable.
  constexpr GraphSizes z = detail::model_sizes<F>();
  return detail::build_model<F, z>();
#else
  // g++ reports a failed named constant again at every use (eight more errors); as a
  // template argument it is reported once, with the throw's line.
  return detail::build_model<F, detail::model_sizes<F>()>();
#endif
}

}  // namespace stag

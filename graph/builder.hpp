// The graph builder: model functions append nodes to it while the compiler evaluates them.
// `stag::model(fn)` runs fn twice at compile time (once to size the arrays, once to fill them)
// and returns a Graph: a constant whose nodes, shapes and names static_assert can inspect.
#pragma once

#include <array>
#include <initializer_list>
#include <stdexcept>
#include <vector>

#include <stag/graph/graph_view.hpp>
#include <stag/graph/report.hpp>

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
template <GraphSizes B>
struct BoundedGraph;

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
  // The first failed check on a run-time value (graph/report.hpp); model() reports it.
  BuildFailure failure{};

  constexpr Builder() { scopes.push_back(ScopeEntry{}); }

  // A check on a run-time value failed: while a model is built at compile time, record it (the
  // layer goes on with a placeholder, and model() makes it one compile error); at run time, throw.
  constexpr void fail(const BuildFailure& f) {
    if (!std::is_constant_evaluated()) throw GraphError(std::string(f.text.c, f.text.n));
    if (failure.check == BuildCheck::none) failure = f;
  }

  constexpr GraphView view() const {
    return GraphView{nodes, shapes, attrs, scopes, syms, outputs, result, dim_names};
  }
  constexpr const Node& node(int n) const { return nodes[static_cast<std::size_t>(n)]; }
  constexpr const ShapeV& shape(int n) const {
    return shapes[static_cast<std::size_t>(node(n).shape)];
  }
  constexpr DType dtype(int n) const { return node(n).dtype; }
  // NOTE: not view().attr(n): building a view costs seven span constructions (see intern_shape).
  constexpr const Attrs& attr(int n) const {
    const int a = node(n).attr;
    return a < 0 ? kNoAttrs : attrs[static_cast<std::size_t>(a)];
  }
  constexpr int size() const { return static_cast<int>(nodes.size()); }

  // NOTE on compile memory: every function call a constant evaluation makes costs g++ about a
  // kilobyte that is only freed after the whole TU has been parsed (vector::operator[], an
  // iterator's ++ and * are calls). The scans below run once per node or per scope over whole
  // tables, so they index raw pointers and compare plain fields before calling anything: this
  // helped take bench/model_tf.cpp from 3.4 GB to 1.2 GB (docs/shapes.md, "Compile memory").
  constexpr int intern_shape(const ShapeV& s) {
    // Recent shapes are the likeliest matches; graphs hold a few dozen distinct shapes.
    const ShapeV* t = shapes.data();
    for (int i = static_cast<int>(shapes.size()) - 1; i >= 0; --i) {
      bool same = t[i].rank == s.rank;
      for (int d = 0; same && d < s.rank; ++d)
        same = t[i].dims[d].coef == s.dims[d].coef && t[i].dims[d].nsym == s.dims[d].nsym &&
               t[i].dims[d].nname == s.dims[d].nname;
      if (same && identical(t[i], s)) return i;
    }
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
    const ScopeEntry* e = scopes.data();  // NOTE: see intern_shape
    const std::size_t n = scopes.size();
    for (std::size_t i = 1; i < n; ++i)
      if (e[i].parent == parent && e[i].index == index && e[i].word.size() == word.size() &&
          e[i].word == word)
        return static_cast<std::int32_t>(i);
    scopes.push_back(ScopeEntry{parent, word, index});
    return static_cast<std::int32_t>(scopes.size()) - 1;
  }

  constexpr void add_sym(SymId id, std::string_view name) {
    const SymEntry* s = syms.data();  // NOTE: see intern_shape
    for (std::size_t i = 0, n = syms.size(); i < n; ++i) {
      if (s[i].id != id) continue;
      if (s[i].name != name)
        throw GraphError("stag: two symbol names hash to the same id; rename one");
      return;
    }
    syms.push_back(SymEntry{id, name});
  }

  constexpr void add_dim_name(SymId id, std::string_view name) {
    const SymEntry* s = dim_names.data();  // NOTE: see intern_shape
    for (std::size_t i = 0, n = dim_names.size(); i < n; ++i) {
      if (s[i].id != id) continue;
      if (s[i].name != name)
        throw GraphError("stag: two dim names hash to the same id; rename one");
      return;
    }
    dim_names.push_back(SymEntry{id, name});
  }

  constexpr void add_output(int node, std::string_view name, int grad_of = -1) {
    const OutputEntry* o = outputs.data();  // NOTE: see intern_shape
    if (grad_of < 0)
      for (std::size_t i = 0, n = outputs.size(); i < n; ++i)
        if (o[i].grad_of < 0 && o[i].name.size() == name.size() && o[i].name == name)
          throw GraphError("stag: two graph outputs have the same name");
    outputs.push_back(OutputEntry{node, name, grad_of});
  }

  constexpr Scope root() { return Scope{this, 0}; }
  constexpr Scope operator/(std::string_view word) { return root() / word; }
  constexpr Scope operator/(int index) { return root() / index; }

  // Checks made once the model function has returned: unique input and parameter names.
  constexpr void finish() const {
    const Node* nd = nodes.data();  // NOTE: see intern_shape
    const std::size_t n = nodes.size();
    for (std::size_t i = 0; i < n; ++i) {
      if (!(nd[i].flags & (kFlagInput | kFlagParam))) continue;
      for (std::size_t j = i + 1; j < n; ++j)
        if ((nd[j].flags & (kFlagInput | kFlagParam)) && nd[i].scope == nd[j].scope &&
            nd[i].leaf.size() == nd[j].leaf.size() && nd[i].leaf == nd[j].leaf)
          throw GraphError("stag: two inputs or parameters have the same name; scope them apart");
    }
  }

  // Room for tables of these sizes. NOTE: a vector that grows in a constant evaluation costs
  // g++ about 5 KB per element moved (freed only after parsing), three times what the push
  // itself costs: the builders reserve what the graph will likely need up front.
  constexpr void reserve(const GraphSizes& z) {
    nodes.reserve(z.nodes);
    shapes.reserve(z.shapes);
    attrs.reserve(z.attrs);
    scopes.reserve(z.scopes);
    syms.reserve(z.syms);
    outputs.reserve(z.outputs);
    dim_names.reserve(z.dim_names);
  }

  constexpr GraphSizes sizes() const {
    return {nodes.size(), shapes.size(),  attrs.size(),    scopes.size(),
            syms.size(),  outputs.size(), dim_names.size()};
  }

  template <GraphSizes Z>
  constexpr Graph<Z> freeze() const;
  template <GraphSizes B>
  constexpr struct BoundedGraph<B> freeze_bounded() const;
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

namespace detail {
// Copies n elements through raw pointers, not operator[] (compile memory: see intern_shape).
template <class T>
constexpr void copy_n(T* to, const T* from, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
}
// Copies the first z entries of each table, and the result (a Builder's or a Graph's).
template <class To, class From>
constexpr void copy_tables(To& to, const From& from, const GraphSizes& z) {
  copy_n(to.nodes.data(), from.nodes.data(), z.nodes);
  copy_n(to.shapes.data(), from.shapes.data(), z.shapes);
  copy_n(to.attrs.data(), from.attrs.data(), z.attrs);
  copy_n(to.scopes.data(), from.scopes.data(), z.scopes);
  copy_n(to.syms.data(), from.syms.data(), z.syms);
  copy_n(to.outputs.data(), from.outputs.data(), z.outputs);
  copy_n(to.dim_names.data(), from.dim_names.data(), z.dim_names);
  to.result = from.result;
}
}  // namespace detail

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
  constexpr operator GraphView() const& { return view(); }  // NOLINT: graphs are views.
  // Not of a temporary: the view would dangle once the statement ends (a Session keeps its
  // view), and a graph built as a temporary is built at run time, field by field, which costs
  // g++ seconds per graph. Name it: `static constexpr auto g = grad<m>();`.
  operator GraphView() const&& = delete;

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
  detail::copy_tables(g, *this, Z);
  return g;
}

// A graph frozen into arrays of at least its sizes (B), with the sizes it uses: the graph
// passes that derive one graph from another build it once this way and copy it into a
// Graph<used>, instead of building it twice (once for its sizes, once to freeze it), which
// halves their compile memory. `fits` is false when a table outgrew B (then nothing is copied
// and the caller builds twice).
template <GraphSizes B>
struct BoundedGraph {
  Graph<B> g;
  GraphSizes used;
  bool fits = false;
};

constexpr bool fits_in(const GraphSizes& z, const GraphSizes& b) {
  return z.nodes <= b.nodes && z.shapes <= b.shapes && z.attrs <= b.attrs && z.scopes <= b.scopes &&
         z.syms <= b.syms && z.outputs <= b.outputs && z.dim_names <= b.dim_names;
}

template <GraphSizes B>
constexpr BoundedGraph<B> Builder::freeze_bounded() const {
  BoundedGraph<B> r;
  r.used = sizes();
  r.fits = fits_in(r.used, B);
  if (!r.fits) return r;
  detail::copy_tables(r.g, *this, r.used);
  return r;
}

// The first Z entries of a bounded graph's tables, as a graph of exactly its size.
template <GraphSizes Z, GraphSizes B>
constexpr Graph<Z> shrink(const BoundedGraph<B>& b) {
  Graph<Z> g;
  detail::copy_tables(g, b.g, Z);
  return g;
}

// Bounds for a graph derived from another (a training graph: about 4x the nodes, 3.6x the
// attributes, 2.5x the scopes, an output per parameter): `grow` times the node and attribute
// tables, plus room. A graph that outgrows them is built twice instead (BoundedGraph).
constexpr GraphSizes derived_bound(const GraphView& v, std::size_t grow) {
  return {grow * v.nodes.size() + 64, 2 * v.shapes.size() + 32,
          grow * v.attrs.size() + 64, 3 * v.scopes.size() + 32,
          v.syms.size() + 8,          v.outputs.size() + v.nodes.size() / 2 + 16,
          v.dim_names.size() + 8};
}

// Freezes the graph that Build() returns, building it once when it fits in B (the usual
// case) and twice (sizes, then freeze) when it does not.
template <Builder (*Build)(), GraphSizes B>
consteval auto freeze_once() {
  constexpr auto big = Build().template freeze_bounded<B>();
  if constexpr (big.fits) {
    return shrink<big.used>(big);
  } else {
    constexpr GraphSizes z = Build().sizes();
    return Build().template freeze<z>();
  }
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
// What the first pass reserves (a model's sizes are known only after it).
inline constexpr GraphSizes kFirstPassReserve{2048, 128, 2048, 512, 16, 64, 16};
// What the first pass learns: the tables' sizes, and the first failed check on a run-time value.
struct FirstPass {
  GraphSizes sizes;
  BuildFailure failure;
};
template <class F>
constexpr FirstPass model_sizes() {
  Builder b;
  b.reserve(kFirstPassReserve);
  run_model<F>(b);
  return {b.sizes(), b.failure};
}
template <class F, GraphSizes Z>
consteval Graph<Z> build_model() {
  Builder b;
  b.reserve(Z);
  run_model<F>(b);
  return b.freeze<Z>();
}
// One error for a failed check on a run-time value, then the graph as built (with the layer's
// placeholder), so that the lines using it compile.
// A class, not a function: an error in a function called from model() would fail the constant
// evaluation too (two more errors).
template <BuildFailure X>
struct failure_report {
#if defined(__clang__)
  static constexpr std::size_t size = sizeof(build_check_report<X.check, X.a, X.b>);
#else
  static constexpr std::size_t size = sizeof(shape_error<as_message<X.text>()>);
#endif
};
template <>
struct failure_report<BuildFailure{}> {
  static constexpr std::size_t size = 0;
};
template <class F, FirstPass P>
consteval Graph<P.sizes> checked_build() {
  (void)failure_report<P.failure>::size;
  return build_model<F, P.sizes>();
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
  constexpr detail::FirstPass p = detail::model_sizes<F>();
  (void)detail::failure_report<p.failure>::size;
  return detail::build_model<F, p.sizes>();
#else
  // g++ reports a failed named constant again at every use (eight more errors); as a
  // template argument it is reported once, with the throw's line.
  return detail::checked_build<F, detail::model_sizes<F>()>();
#endif
}

}  // namespace stag

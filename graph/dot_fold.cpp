// Folding of repeated blocks for the collapsed DOT view (graph/dot.hpp): finds runs of
// numbered scopes (enc.0, enc.1, ...) whose subgraphs have the same structure and maps every
// node of a run onto the run's first block. To compare more (or less) when matching blocks,
// change block_signature.
#include <algorithm>
#include <cstring>

#include <stag/graph/dot.hpp>

namespace stag {

namespace {

struct ScopeTree {
  std::vector<std::vector<std::int32_t>> children;  // per scope, in creation order
  std::vector<std::vector<std::int32_t>> nodes;  // per scope: the nodes of its subtree, ascending
  std::vector<int> depth;
};

ScopeTree scope_tree(const GraphView& g) {
  const std::size_t ns = g.scopes.size();
  ScopeTree t;
  t.children.resize(ns);
  t.nodes.resize(ns);
  t.depth.assign(ns, 0);
  for (std::size_t s = 1; s < ns; ++s) {
    const std::int32_t p = g.scopes[s].parent;
    if (p >= 0 && static_cast<std::size_t>(p) < ns)
      t.children[static_cast<std::size_t>(p)].push_back(static_cast<std::int32_t>(s));
  }
  // Parents are created before their children, so one forward pass computes depths.
  for (std::size_t s = 1; s < ns; ++s) {
    const std::int32_t p = g.scopes[s].parent;
    t.depth[s] = (p >= 0 ? t.depth[static_cast<std::size_t>(p)] : 0) + 1;
  }
  for (int n = 0; n < g.size(); ++n)
    for (std::int32_t s = g.node(n).scope; s > 0; s = g.scopes[static_cast<std::size_t>(s)].parent)
      t.nodes[static_cast<std::size_t>(s)].push_back(n);
  return t;
}

template <class T>
void put(std::string& out, const T& v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}

void put_text(std::string& out, std::string_view s) {
  put(out, s.size());
  out.append(s);
}

// The structure of the subgraph under scope `block`, as a byte string; equal strings mean the
// blocks can be drawn as one.
std::string block_signature(const GraphView& g, const std::vector<std::int32_t>& members,
                            std::int32_t block, const DotOps& ops) {
  auto position = [&](std::int32_t n) -> std::int64_t {
    const auto it = std::lower_bound(members.begin(), members.end(), n);
    return it != members.end() && *it == n ? it - members.begin() : -1;
  };
  std::string sig;
  for (const std::int32_t n : members) {
    const Node& nd = g.node(n);
    put(sig, nd.op.value);
    put(sig, nd.dtype);
    put(sig, nd.flags);
    put(sig, nd.nin);
    put(sig, nd.shape);  // shapes are interned: equal shapes have equal indices
    Attrs a = g.attr(n);
    if (ops.fold_attrs) ops.fold_attrs(g, n, a);
    put(sig, a);
    put_text(sig, nd.leaf);
    // The node's scope relative to the block, innermost first.
    for (std::int32_t s = nd.scope; s != block && s > 0;
         s = g.scopes[static_cast<std::size_t>(s)].parent) {
      put_text(sig, g.scopes[static_cast<std::size_t>(s)].word);
      put(sig, g.scopes[static_cast<std::size_t>(s)].index);
    }
    put(sig, std::int32_t{-7});
    for (int k = 0; k < nd.nin; ++k) put(sig, position(nd.in[k]));
    put(sig, nd.grad_of >= 0 ? position(nd.grad_of) : std::int64_t{-2});
  }
  for (const OutputEntry& o : g.outputs) {
    // Which of the block's nodes are graph outputs is part of its structure too.
    const std::int64_t p = position(o.node);
    if (p >= 0) put(sig, p);
  }
  return sig;
}

}  // namespace

int Folding::drawn_nodes() const {
  int c = 0;
  for (const std::int32_t k : copies) c += k > 0;
  return c;
}

Folding no_folding(const GraphView& g) {
  Folding f;
  f.drawn_as.resize(static_cast<std::size_t>(g.size()));
  for (int n = 0; n < g.size(); ++n) f.drawn_as[static_cast<std::size_t>(n)] = n;
  f.copies.assign(static_cast<std::size_t>(g.size()), 1);
  f.run_of.assign(g.scopes.size(), -1);
  f.member_of.assign(g.scopes.size(), -1);
  return f;
}

Folding fold_repeats(const GraphView& g, const DotOps& ops) {
  Folding f = no_folding(g);
  if (g.scopes.empty()) return f;
  const ScopeTree t = scope_tree(g);
  const std::size_t ns = g.scopes.size();
  const auto& nodes = t.nodes;
  std::vector<bool> folded_away(ns, false);  // scopes inside a block that is not drawn

  // Outer scopes first, so that an outer run claims its blocks before inner ones are compared.
  std::vector<std::int32_t> order(ns);
  for (std::size_t s = 0; s < ns; ++s) order[s] = static_cast<std::int32_t>(s);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return t.depth[static_cast<std::size_t>(a)] < t.depth[static_cast<std::size_t>(b)];
  });

  for (const std::int32_t parent : order) {
    if (folded_away[static_cast<std::size_t>(parent)]) continue;
    std::vector<std::int32_t> numbered;
    for (const std::int32_t c : t.children[static_cast<std::size_t>(parent)])
      if (g.scopes[static_cast<std::size_t>(c)].index >= 0 &&
          !nodes[static_cast<std::size_t>(c)].empty())
        numbered.push_back(c);
    std::sort(numbered.begin(), numbered.end(), [&](std::int32_t a, std::int32_t b) {
      return g.scopes[static_cast<std::size_t>(a)].index <
             g.scopes[static_cast<std::size_t>(b)].index;
    });
    std::vector<std::string> sigs;
    for (const std::int32_t c : numbered)
      sigs.push_back(block_signature(g, nodes[static_cast<std::size_t>(c)], c, ops));

    for (std::size_t i = 0; i < numbered.size();) {
      std::size_t j = i + 1;
      while (j < numbered.size() && sigs[j] == sigs[i] &&
             g.scopes[static_cast<std::size_t>(numbered[j])].index ==
                 g.scopes[static_cast<std::size_t>(numbered[j - 1])].index + 1)
        ++j;
      if (j - i >= 2) {
        RepeatRun run;
        run.parent = parent;
        run.first_index = g.scopes[static_cast<std::size_t>(numbered[i])].index;
        run.scopes.assign(numbered.begin() + static_cast<std::ptrdiff_t>(i),
                          numbered.begin() + static_cast<std::ptrdiff_t>(j));
        const std::vector<std::int32_t>& rep_nodes = nodes[static_cast<std::size_t>(run.scopes[0])];
        for (std::size_t m = 1; m < run.scopes.size(); ++m) {
          const std::vector<std::int32_t>& block = nodes[static_cast<std::size_t>(run.scopes[m])];
          for (std::size_t k = 0; k < block.size(); ++k)
            f.drawn_as[static_cast<std::size_t>(block[k])] = rep_nodes[k];
          // Every scope under a folded block is folded away with it.
          for (std::size_t s = 1; s < ns; ++s)
            for (std::int32_t a = static_cast<std::int32_t>(s); a > 0;
                 a = g.scopes[static_cast<std::size_t>(a)].parent)
              if (a == run.scopes[m]) {
                folded_away[s] = true;
                break;
              }
        }
        const auto r = static_cast<std::int32_t>(f.runs.size());
        f.run_of[static_cast<std::size_t>(run.scopes[0])] = r;
        for (const std::int32_t b : run.scopes) f.member_of[static_cast<std::size_t>(b)] = r;
        f.runs.push_back(std::move(run));
      }
      i = j;
    }
  }

  // Inner runs remap nodes that outer runs mapped onto their drawn block: follow the chain.
  for (std::size_t n = 0; n < f.drawn_as.size(); ++n) {
    std::int32_t r = f.drawn_as[n];
    while (f.drawn_as[static_cast<std::size_t>(r)] != r)
      r = f.drawn_as[static_cast<std::size_t>(r)];
    f.drawn_as[n] = r;
  }
  std::fill(f.copies.begin(), f.copies.end(), 0);
  for (const std::int32_t r : f.drawn_as) ++f.copies[static_cast<std::size_t>(r)];
  return f;
}

}  // namespace stag

// Reads DOT text back with Graphviz's own parser (libcgraph), so that tests check what Graphviz
// sees: node, edge and cluster counts, labels and attributes. Extend ParsedDot as tests need.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <graphviz/cgraph.h>

namespace th {

struct ParsedEdge {
  std::string tail, head, label, dir, style;
};
struct ParsedCluster {
  std::string name, label;
  int nodes = 0;  // including the nodes of clusters inside it
};
struct ParsedDot {
  bool ok = false;
  int nodes = 0, edges = 0;
  std::map<std::string, std::map<std::string, std::string>> node_attrs;  // node -> attr -> value
  std::vector<ParsedEdge> edge_list;
  std::vector<ParsedCluster> clusters;  // every cluster at any depth

  const std::string& attr(const std::string& node, const std::string& name) const {
    static const std::string none;
    const auto n = node_attrs.find(node);
    if (n == node_attrs.end()) return none;
    const auto a = n->second.find(name);
    return a == n->second.end() ? none : a->second;
  }
  const ParsedCluster* cluster_labelled(const std::string& label) const {
    for (const auto& c : clusters)
      if (c.label == label) return &c;
    return nullptr;
  }
};

namespace detail {
inline std::string get(void* obj, const char* name) {
  const char* v = agget(obj, const_cast<char*>(name));
  return v ? std::string(v) : std::string();
}
inline void collect_clusters(Agraph_t* g, ParsedDot& out) {
  for (Agraph_t* s = agfstsubg(g); s; s = agnxtsubg(s)) {
    const std::string name = agnameof(s);
    if (name.rfind("cluster", 0) == 0) out.clusters.push_back({name, get(s, "label"), agnnodes(s)});
    collect_clusters(s, out);
  }
}
}  // namespace detail

inline ParsedDot parse_dot(const std::string& text) {
  ParsedDot out;
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> g(agmemread(text.c_str()), &agclose);
  if (!g) return out;
  out.ok = true;
  out.nodes = agnnodes(g.get());
  out.edges = agnedges(g.get());
  for (Agnode_t* n = agfstnode(g.get()); n; n = agnxtnode(g.get(), n)) {
    auto& attrs = out.node_attrs[agnameof(n)];
    for (const char* a :
         {"label", "fillcolor", "color", "penwidth", "peripheries", "tooltip", "shape"})
      attrs[a] = detail::get(n, a);
    for (Agedge_t* e = agfstout(g.get(), n); e; e = agnxtout(g.get(), e))
      out.edge_list.push_back({agnameof(agtail(e)), agnameof(aghead(e)), detail::get(e, "label"),
                               detail::get(e, "dir"), detail::get(e, "style")});
  }
  detail::collect_clusters(g.get(), out);
  return out;
}

}  // namespace th

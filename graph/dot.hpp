// DOT export of any stag graph (inference or training) for Graphviz: labelled nodes, clusters
// per scope, backward and optimizer nodes set apart, and a collapsed view that draws repeated
// blocks once. Rendering to SVG/PNG/PDF is runtime/viz/render.hpp; to add a node style, extend
// NodeKind in dot.cpp and the legend there.
//
// Why the op names come in through DotOps: graph/ knows nothing of ops/ (an op is only an
// OpCode here), but a picture needs each op's name and label. Rather than move the exporter
// out of graph/ (it needs nothing else from ops/, and graph passes should be drawable in
// isolation), the caller passes the registry's lookup functions. stag::dot_options()
// (runtime/viz/render.hpp) fills them from ops/registry.hpp; without them nodes read "op#17".
#pragma once

#include <map>
#include <string>
#include <vector>

#include <stag/graph/graph_view.hpp>

namespace stag {

// The op-specific parts of a node's label, supplied by whoever knows the registry.
struct DotOps {
  std::string_view (*name)(OpCode) = nullptr;   // "matmul": tooltips
  std::string_view (*label)(OpCode) = nullptr;  // "@": the node's title
  // Attribute text shown after the title ("axis -1", "0.25", "a·bᵀ"); may be null or return "".
  std::string (*detail)(const GraphView&, int node) = nullptr;
  // Clears the attribute slots that identify a node rather than describe it (dropout's salt,
  // which gives every dropout node its own random stream), so that the collapsed view folds
  // layers that differ only there. May be null: attributes are then compared whole.
  void (*fold_attrs)(const GraphView&, int node, Attrs& attrs) = nullptr;
};

// Per-node facts from outside the graph, keyed by node index: the runtime passes buffer and
// bytes from its memory plan, the chosen kernel, or measured times, without the exporter
// knowing what they mean. In the collapsed view a drawn node shows its own lines and the
// largest heat of the nodes it stands for.
struct DotAnnotations {
  std::string title;                              // what the lines show, e.g. "time per node"
  std::map<int, std::vector<std::string>> lines;  // extra label lines per node
  std::map<int, double> heat;                     // in [0, 1]; 1 = the hottest node
  double hot_threshold = 0.8;                     // nodes at or above it are outlined in red

  bool empty() const { return lines.empty() && heat.empty(); }
};

struct DotOptions {
  DotOps ops;
  std::string title;              // the picture's caption (the legend follows it)
  bool collapse = false;          // draw each run of identical blocks (enc.0 .. enc.5) once
  bool clusters = true;           // one box per scope
  bool edge_shapes = true;        // label each edge with the shape flowing along it
  bool separate_backward = true;  // backward (and optimizer) nodes in their own box tree
  bool legend = true;             // a key of node styles under the title
  bool gradient_links = true;     // dashed lines from forward nodes to their backward nodes
  std::string rankdir = "TB";     // "TB" (top to bottom) or "LR"
  DotAnnotations annotations;
};

// A run of consecutive numbered blocks with the same structure, e.g. enc.0 .. enc.5: the
// collapsed view draws scopes[0] and maps every node of the other blocks onto it.
struct RepeatRun {
  std::int32_t parent = 0;           // the scope holding the blocks (`enc`)
  std::vector<std::int32_t> scopes;  // the blocks' scopes in index order
  int first_index = 0;  // the blocks are numbered first_index .. first_index + size - 1

  int count() const { return static_cast<int>(scopes.size()); }
};

// The result of folding repeats: which node draws each node, and how many each one stands for.
struct Folding {
  std::vector<RepeatRun> runs;
  std::vector<std::int32_t> drawn_as;  // per node: the node that represents it (itself if unfolded)
  std::vector<std::int32_t> copies;    // per node: how many nodes it represents (0 if folded away)
  std::vector<std::int32_t> run_of;    // per scope: the run whose drawn block it is, or -1
  std::vector<std::int32_t> member_of;  // per scope: the run it is a block of (drawn or not), or -1

  int drawn_nodes() const;
};

// Finds runs of structurally identical numbered blocks, outermost first; blocks inside a drawn
// block are folded again (heads inside layers). Two blocks are identical when their nodes, in
// graph order, agree in op, attributes, shape, dtype, flags, name within the block and in which
// node of the block each input comes from. Inputs from outside the block are not compared, so
// layer 0 (fed by the embedding) matches layer 1 (fed by layer 0). A block's backward nodes
// belong to it: in a training graph the first and last layers usually stay apart, because the
// first computes no gradient for its input and the last receives its gradient from the loss.
// `ops.fold_attrs`, when given, says which attributes to leave out of the comparison
// (dot_options() fills it; without it, layers with dropout never fold).
Folding fold_repeats(const GraphView& g, const DotOps& ops = {});
// The identity folding (every node drawn as itself).
Folding no_folding(const GraphView& g);

// The DOT text of `g`. Produces a `digraph` that Graphviz's dot layout draws top to bottom.
std::string to_dot(const GraphView& g, const DotOptions& opts);

// Text escaped for XML: Graphviz's HTML-like labels and the SVG pictures (& < > " ' become
// entities; control characters other than tab and newline, not allowed in XML 1.0, are dropped).
std::string xml_escape(std::string_view text);

// A shape with symbol names, e.g. "[batch, seq, 512]" (the same text as runtime error messages).
std::string dot_shape_text(const GraphView& g, const ShapeV& s);

}  // namespace stag

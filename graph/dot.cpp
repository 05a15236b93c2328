// The DOT writer (graph/dot.hpp): node labels and styles, clusters per scope (one tree for the
// forward pass, one for backward, one for the optimizer), data edges labelled with shapes, and
// dashed links from each forward node to its backward nodes. Styles live in kStyles below.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <set>
#include <tuple>

#include <stag/graph/dot.hpp>

namespace stag {

std::string dot_shape_text(const GraphView& g, const ShapeV& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank; ++i) {
    if (i > 0) out += ", ";
    out += g.dim_text(s.dims[i]);
  }
  return out + "]";
}

namespace {

enum class NodeKind { op, input, param, constant, backward, optimizer, state, recompute };
enum Side { kForward = 0, kBackward = 1, kOptimizer = 2 };

struct Style {
  const char* legend;
  const char* shape;
  const char* style;
  const char* fill;
  const char* pen;
};
// Indexed by NodeKind.
constexpr Style kStyles[] = {
    {"op", "box", "rounded,filled", "#ffffff", "#566573"},
    {"input", "box", "rounded,filled,bold", "#d6eaf8", "#1f618d"},
    {"parameter", "box", "filled", "#fdebd0", "#b9770e"},
    {"constant", "box", "rounded,filled", "#f2f3f4", "#99a3a4"},
    {"backward", "box", "rounded,filled", "#fadbd8", "#922b21"},
    {"optimizer", "box", "rounded,filled", "#d5f5e3", "#1e8449"},
    {"optimizer state", "box", "filled", "#e8daef", "#6c3483"},
    {"recomputed", "box", "rounded,filled,dashed", "#fef5e7", "#ca6f1e"},
};
inline constexpr int kKinds = static_cast<int>(std::size(kStyles));
// Indexed by Side: cluster name prefix, fill and the caption of the side's outer box.
constexpr const char* kClusterPrefix[] = {"cluster_f", "cluster_b", "cluster_o"};
constexpr const char* kClusterFill[] = {"#f8f9f9", "#fdf2f1", "#eafaf1"};

NodeKind kind_of(const Node& n) {
  if (n.flags & kFlagRecompute) return NodeKind::recompute;  // a plan's rewrite (remat.hpp)
  if (n.flags & kFlagState) return NodeKind::state;
  if (n.flags & kFlagOptimizer) return NodeKind::optimizer;
  if (n.flags & kFlagBackward) return NodeKind::backward;
  if (n.flags & kFlagInput) return NodeKind::input;
  if (n.flags & kFlagParam) return NodeKind::param;
  if (n.nin == 0) return NodeKind::constant;
  return NodeKind::op;
}

Side side_of(const Node& n) {
  if (n.flags & (kFlagOptimizer | kFlagState)) return kOptimizer;
  if (n.flags & (kFlagBackward | kFlagRecompute)) return kBackward;
  return kForward;
}

// A DOT string literal.
std::string quoted(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

// Mixes two #rrggbb colours: t = 0 gives a, t = 1 gives b.
std::string mix(const char* a, const char* b, double t) {
  unsigned ca = 0, cb = 0;
  std::sscanf(a + 1, "%x", &ca);
  std::sscanf(b + 1, "%x", &cb);
  int c[3];
  for (int k = 0; k < 3; ++k) {
    const int x = static_cast<int>((ca >> (16 - 8 * k)) & 255u),
              y = static_cast<int>((cb >> (16 - 8 * k)) & 255u);
    c[k] = static_cast<int>(std::lround(x + (y - x) * t));
  }
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c[0], c[1], c[2]);
  return buf;
}

std::string node_id(int n) {
  std::string id = std::to_string(n);
  id.insert(id.begin(), 'n');
  return id;
}

class Writer {
 public:
  Writer(const GraphView& gv, const DotOptions& opts)
      : g_(gv), o_(opts), fold_(opts.collapse ? fold_repeats(gv, opts.ops) : no_folding(gv)) {
    const std::size_t ns = std::max<std::size_t>(g_.scopes.size(), 1);
    children_.resize(ns);
    for (std::size_t s = 1; s < g_.scopes.size(); ++s)
      children_[static_cast<std::size_t>(g_.scopes[s].parent)].push_back(
          static_cast<std::int32_t>(s));
    for (int side = 0; side < 3; ++side) {
      direct_[side].resize(ns);
      nonempty_[side].assign(ns, false);
    }
    for (int n = 0; n < g_.size(); ++n) {
      if (rep(n) != n) continue;
      const int side = side_in_picture(n);
      const std::int32_t sc = o_.clusters ? g_.node(n).scope : 0;
      direct_[side][static_cast<std::size_t>(sc)].push_back(n);
      for (std::int32_t s = sc; s >= 0; s = s > 0 ? parent(s) : -1)
        nonempty_[side][static_cast<std::size_t>(s)] = true;
    }
    // Nodes that no output, result or update needs: the runtime computes them only when asked
    // (SessionOptions::keep), e.g. the softmax chain left by the attention fusion pass.
    needed_.assign(static_cast<std::size_t>(g_.size()), 0);
    for (const OutputEntry& e : g_.outputs) needed_[static_cast<std::size_t>(e.node)] = 1;
    if (g_.result >= 0) needed_[static_cast<std::size_t>(g_.result)] = 1;
    for (int n = g_.size() - 1; n >= 0; --n) {
      const Node& nd = g_.node(n);
      if (nd.flags & (kFlagInput | kFlagParam | kFlagOptimizer | kFlagState))
        needed_[static_cast<std::size_t>(n)] = 1;
      if (!needed_[static_cast<std::size_t>(n)]) continue;
      for (int k = 0; k < nd.nin; ++k) needed_[static_cast<std::size_t>(nd.in[k])] = 1;
    }
    heat_.assign(static_cast<std::size_t>(g_.size()), -1.0);
    for (const auto& [n, h] : o_.annotations.heat) {
      if (n < 0 || n >= g_.size() || !(h >= 0.0)) continue;  // also skips NaN
      double& d = heat_[static_cast<std::size_t>(rep(n))];
      d = std::max(d, std::min(h, 1.0));
    }
  }

  std::string write() {
    out_ = "digraph stag {\n";
    // newrank lets the backward tree rank freely against the forward clusters (without it, dot
    // fails with "trouble in init_rank" on training graphs).
    out_ +=
        "  graph [newrank=true, rankdir=" + std::string(o_.rankdir == "LR" ? "LR" : "TB") +
        ", fontname=\"Helvetica\", fontsize=11, nodesep=0.25, ranksep=0.3, labeljust=l, labelloc=t";
    if (o_.legend) out_ += ", label=<" + legend() + ">";
    out_ += "];\n";
    out_ += "  node [fontname=\"Helvetica\", fontsize=11, margin=\"0.1,0.03\", height=0.3];\n";
    out_ +=
        "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#566573\", fontcolor=\"#566573\", "
        "arrowsize=0.6];\n";
    for (int side = 0; side < 3; ++side) side_tree(side);
    data_edges();
    if (o_.gradient_links) gradient_links();
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  const GraphView& g_;
  const DotOptions& o_;
  Folding fold_;
  std::vector<std::vector<std::int32_t>> children_;   // per scope
  std::vector<std::vector<std::int32_t>> direct_[3];  // per side and scope: drawn nodes in it
  std::vector<bool> nonempty_[3];                     // per side and scope: any drawn node below
  std::vector<double> heat_;                          // per drawn node: largest heat, -1 if none
  std::vector<char> needed_;                          // per node: an output or update needs it
  std::string out_;

  std::int32_t rep(int n) const { return fold_.drawn_as[static_cast<std::size_t>(n)]; }
  std::int32_t parent(std::int32_t s) const {
    return g_.scopes[static_cast<std::size_t>(s)].parent;
  }
  int side_in_picture(int n) const { return o_.separate_backward ? side_of(g_.node(n)) : kForward; }
  bool is_forward(int n) const { return side_of(g_.node(n)) == kForward; }

  std::string op_label(OpCode c) const {
    return o_.ops.label ? std::string(o_.ops.label(c)) : "op#" + std::to_string(c.value);
  }
  std::string op_name(OpCode c) const {
    return o_.ops.name ? std::string(o_.ops.name(c)) : "op#" + std::to_string(c.value);
  }

  // A scope's name with folded runs written as ranges: enc.[0-5].attn
  std::string scope_label(std::int32_t sc) const {
    std::vector<std::int32_t> path;
    for (std::int32_t s = sc; s > 0; s = parent(s)) path.push_back(s);
    std::string out;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const ScopeEntry& e = g_.scopes[static_cast<std::size_t>(*it)];
      const int run = fold_.run_of[static_cast<std::size_t>(*it)];
      if (!out.empty()) out += '.';
      if (run >= 0) {
        const RepeatRun& r = fold_.runs[static_cast<std::size_t>(run)];
        out += '[';
        out += std::to_string(r.first_index);
        out += '-';
        out += std::to_string(r.first_index + r.count() - 1);
        out += ']';
      } else {
        out += e.index >= 0 ? std::to_string(e.index) : std::string(e.word);
      }
    }
    return out;
  }
  std::string scoped_name(int n) const {
    const std::string sc = scope_label(g_.node(n).scope);
    return sc.empty() ? std::string(g_.node(n).leaf) : sc + "." + std::string(g_.node(n).leaf);
  }

  // The graph outputs a node carries ("gradient of enc.0.w_q.weight", "output logits").
  std::vector<std::string> output_notes(int n) const {
    std::vector<std::string> notes;
    for (const OutputEntry& e : g_.outputs) {
      if (e.node != n) continue;
      notes.push_back(e.grad_of >= 0 ? "gradient of " + scoped_name(e.grad_of)
                                     : "output " + std::string(e.name));
    }
    if (n == g_.result) notes.emplace_back("result");
    return notes;
  }

  void node(int n, int indent) {
    const Node& nd = g_.node(n);
    const Style& st = kStyles[static_cast<int>(kind_of(nd))];
    const std::string label = op_label(nd.op), name = op_name(nd.op);
    const std::string shape =
        dot_shape_text(g_, g_.shape(n)) + " " + std::string(dtype_name(nd.dtype));

    std::string text = "<B>" + xml_escape(label) + "</B>";
    if (o_.ops.detail) {
      const std::string d = o_.ops.detail(g_, n);
      if (!d.empty()) text += " " + xml_escape(d);
    }
    // The leaf name is shown unless it only repeats the op (intermediate nodes default to it).
    if (!nd.leaf.empty() && nd.leaf != label && nd.leaf != name)
      text += "<BR/><FONT POINT-SIZE=\"10\">" + xml_escape(nd.leaf) + "</FONT>";
    text += "<BR/><FONT POINT-SIZE=\"9\" COLOR=\"#34495e\">" + xml_escape(shape) + "</FONT>";
    const std::vector<std::string> notes = output_notes(n);
    for (const std::string& note : notes)
      text += "<BR/><FONT POINT-SIZE=\"9\" COLOR=\"#922b21\">" + xml_escape(note) + "</FONT>";
    const bool on_request = !needed_[static_cast<std::size_t>(n)];
    if (on_request)
      text += "<BR/><FONT POINT-SIZE=\"9\" COLOR=\"#7f8c8d\">computed only when asked for</FONT>";
    const auto lines = o_.annotations.lines.find(n);
    if (lines != o_.annotations.lines.end())
      for (const std::string& l : lines->second)
        text += "<BR/><FONT POINT-SIZE=\"9\" COLOR=\"#1a5276\">" + xml_escape(l) + "</FONT>";

    std::string tip = g_.name(n);
    if (nd.leaf != name) tip += " (" + name + ")";
    tip += " " + shape + ", node " + std::to_string(n);
    const int copies = fold_.copies[static_cast<std::size_t>(n)];
    if (copies > 1) tip += "; drawn once for " + std::to_string(copies) + " repeated nodes";

    std::string fill = st.fill, pen = st.pen;
    bool hot = false;
    if (const double h = heat_[static_cast<std::size_t>(n)]; h >= 0) {
      fill = mix(st.fill, "#e74c3c", 0.85 * h);
      hot = h >= o_.annotations.hot_threshold;
      if (hot) pen = "#c0392b";
    }
    out_.append(static_cast<std::size_t>(indent), ' ');
    out_ += node_id(n) + " [label=<" + text + ">, shape=" + st.shape + ", style=\"" + st.style +
            (on_request ? ",dashed" : "") + "\", fillcolor=\"" + fill + "\", color=\"" + pen + "\"";
    if (hot) out_ += ", penwidth=3";
    if (!notes.empty()) out_ += ", peripheries=2";
    out_ += ", tooltip=" + quoted(tip) + "];\n";
  }

  // A scope with no nodes of its own and a single box inside adds only a frame: skip it
  // (its name is part of the inner box's label anyway). Drawn blocks of runs always get a box.
  bool skip_frame(int side, std::int32_t sc) const {
    if (sc == 0 || fold_.run_of[static_cast<std::size_t>(sc)] >= 0) return false;
    if (!direct_[side][static_cast<std::size_t>(sc)].empty()) return false;
    int boxes = 0;
    for (const std::int32_t c : children_[static_cast<std::size_t>(sc)])
      boxes += nonempty_[side][static_cast<std::size_t>(c)];
    return boxes == 1;
  }

  void cluster(int side, std::int32_t sc, int indent) {
    const std::size_t s = static_cast<std::size_t>(sc);
    const bool frame = sc > 0 && !skip_frame(side, sc);
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    if (frame) {
      std::string label = scope_label(sc);
      const int run = fold_.run_of[s];
      if (run >= 0)
        label += "  \u00d7" + std::to_string(fold_.runs[static_cast<std::size_t>(run)].count());
      if (side == kBackward) label = "backward " + label;
      if (side == kOptimizer) label = "optimizer " + label;
      out_ += pad + "subgraph " + kClusterPrefix[side] + std::to_string(sc) + " {\n";
      out_ += pad + "  label=" + quoted(label) + "; tooltip=" + quoted(label) + ";\n";
      out_ += pad + "  style=\"rounded,filled\"; fillcolor=\"" + kClusterFill[side] +
              "\"; color=\"" + (run >= 0 ? "#2874a6\"; penwidth=2" : "#aab7b8\"") + ";\n";
    }
    const int inner = indent + (frame ? 2 : 0);
    for (const std::int32_t n : direct_[side][s]) node(n, inner);
    for (const std::int32_t c : children_[s])
      if (nonempty_[side][static_cast<std::size_t>(c)]) cluster(side, c, inner);
    if (frame) out_ += pad + "}\n";
  }

  void side_tree(int side) {
    if (!nonempty_[side][0]) return;
    if (side == kForward) return cluster(side, 0, 2);
    const bool bwd = side == kBackward;
    out_ += std::string("  subgraph ") + (bwd ? "cluster_backward" : "cluster_optimizer") + " {\n";
    out_ += std::string("    label=\"") + (bwd ? "backward (autodiff)" : "optimizer") +
            "\"; style=\"rounded,dashed\"; color=\"" + (bwd ? "#922b21" : "#1e8449") + "\";\n";
    cluster(side, 0, 4);
    out_ += "  }\n";
  }

  std::string legend() const {
    bool present[kKinds] = {};
    for (int n = 0; n < g_.size(); ++n) present[static_cast<int>(kind_of(g_.node(n)))] = true;
    std::string t = "<TABLE BORDER=\"0\" CELLSPACING=\"4\"><TR>";
    if (!o_.title.empty()) t += "<TD><B>" + xml_escape(o_.title) + "</B></TD>";
    for (int k = 0; k < kKinds; ++k)
      if (present[k])
        t += std::string("<TD BORDER=\"1\" BGCOLOR=\"") + kStyles[k].fill + "\" COLOR=\"" +
             kStyles[k].pen + "\"><FONT POINT-SIZE=\"9\">" + kStyles[k].legend + "</FONT></TD>";
    if (!o_.annotations.title.empty())
      t += "<TD><FONT POINT-SIZE=\"9\" COLOR=\"#1a5276\">" + xml_escape(o_.annotations.title) +
           "</FONT></TD>";
    return t + "</TR></TABLE>";
  }

  // The run whose blocks edge u -> v runs between (u and v in two different blocks of it, at
  // any depth), or -1: compare the folded blocks on both scope paths from the outside in.
  int crossed_run(int u, int v) const {
    const std::vector<std::int32_t> bu = blocks_of(u), bv = blocks_of(v);
    for (std::size_t i = 0; i < bu.size() && i < bv.size(); ++i) {
      if (bu[i] == bv[i]) continue;
      const int r = fold_.member_of[static_cast<std::size_t>(bu[i])];
      return r == fold_.member_of[static_cast<std::size_t>(bv[i])] ? r : -1;
    }
    return -1;
  }
  std::vector<std::int32_t> blocks_of(int n) const {
    std::vector<std::int32_t> b;
    for (std::int32_t s = g_.node(n).scope; s > 0; s = parent(s))
      if (fold_.member_of[static_cast<std::size_t>(s)] >= 0) b.insert(b.begin(), s);
    return b;
  }

  // Data edges, folded onto drawn nodes. Edges from one block of a run to the next become one
  // dashed "next block" edge per source (to its first consumer), which does not shape the layout.
  void data_edges() {
    std::set<std::tuple<int, int, int>> seen;
    std::set<std::pair<int, int>> next_block;
    for (int v = 0; v < g_.size(); ++v) {
      const Node& nd = g_.node(v);
      for (int k = 0; k < nd.nin; ++k) {
        const int u = nd.in[k], ru = rep(u), rv = rep(v);
        const int run = fold_.runs.empty() ? -1 : crossed_run(u, v);
        const int side = side_in_picture(v);
        if (run >= 0 ? !next_block.insert({ru, run * 3 + side}).second
                     : !seen.insert({ru, rv, k}).second)
          continue;
        std::string lab = dot_shape_text(g_, g_.shape(u));
        if (g_.node(u).dtype != DType::f32) lab += " " + std::string(dtype_name(g_.node(u).dtype));
        std::string attrs = o_.edge_shapes
                                ? "label=" + quoted(run >= 0 ? lab + " (next block)" : lab)
                                : std::string(run >= 0 ? "label=\"next block\"" : "");
        auto add = [&](const std::string& a) { attrs += (attrs.empty() ? "" : ", ") + a; };
        const bool fwd_u = is_forward(u), fwd_v = is_forward(v);
        if (run >= 0) {
          add("style=dashed, color=\"#2874a6\", fontcolor=\"#2874a6\", constraint=false");
        } else if (fwd_u && !fwd_v) {
          add("color=\"#aab7b8\", fontcolor=\"#7f8c8d\"");  // an activation saved for backward
        } else if (!fwd_u) {
          add("color=\"#922b21\", fontcolor=\"#922b21\"");
        }
        // Gradients flow from the loss back up: a backward edge is laid out reversed (consumer
        // above producer, arrow pointing up), so each layer's backward pass sits beside the
        // activations it reads instead of below the whole forward pass, and dot stays fast.
        if (!fwd_u && !fwd_v && o_.separate_backward && run < 0)
          out_ += "  " + node_id(rv) + " -> " + node_id(ru) + " [dir=back, " + attrs + "];\n";
        else
          out_ += "  " + node_id(ru) + " -> " + node_id(rv) + " [" + attrs + "];\n";
      }
    }
  }

  // Each forward node is linked to the first backward node that differentiates it.
  void gradient_links() {
    std::vector<bool> done(static_cast<std::size_t>(g_.size()), false);
    for (int b = 0; b < g_.size(); ++b) {
      const Node& nd = g_.node(b);
      if (!(nd.flags & kFlagBackward) || nd.grad_of < 0 || nd.grad_of >= g_.size()) continue;
      if (!is_forward(nd.grad_of)) continue;
      const int f = rep(nd.grad_of);
      if (done[static_cast<std::size_t>(f)]) continue;
      done[static_cast<std::size_t>(f)] = true;
      out_ += "  " + node_id(f) + " -> " + node_id(rep(b)) +
              " [style=dashed, color=\"#e6b0aa\", dir=none, constraint=false, "
              "tooltip=\"differentiated by\"];\n";
    }
  }
};

}  // namespace

std::string to_dot(const GraphView& g, const DotOptions& opts) {
  return Writer(g, opts).write();
}

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // NOTE: control characters other than tab and newline are not allowed in XML 1.0, even
        // escaped; a token string may hold one (a raw byte from a tokenizer), so drop it.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') break;
        out += c;
    }
  }
  return out;
}

}  // namespace stag

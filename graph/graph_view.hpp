// GraphView: a non-owning, constexpr-friendly view of a graph (a finished Graph<...> or a
// Builder in progress). Every query on graphs (counts, names, shapes) is written once, here.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include <stag/graph/node.hpp>

namespace stag {

inline constexpr Attrs kNoAttrs{};
inline constexpr std::string_view kGradPrefix = "grad/";
inline constexpr std::string_view kRecomputePrefix = "recompute/";

struct GraphView {
  std::span<const Node> nodes;
  std::span<const ShapeV> shapes;
  std::span<const Attrs> attrs;
  std::span<const ScopeEntry> scopes;
  std::span<const SymEntry> syms;
  std::span<const OutputEntry> outputs;
  std::int32_t result = -1;  // the node the model function returned (the loss for training)
  std::span<const SymEntry> dim_names = {};  // named static dims (`heads`), printed only

  constexpr int size() const { return static_cast<int>(nodes.size()); }
  constexpr const Node& node(int n) const { return nodes[static_cast<std::size_t>(n)]; }
  constexpr const ShapeV& shape(int n) const {
    return shapes[static_cast<std::size_t>(node(n).shape)];
  }
  constexpr const Attrs& attr(int n) const {
    const int a = node(n).attr;
    return a < 0 ? kNoAttrs : attrs[static_cast<std::size_t>(a)];
  }
  constexpr int count(OpCode op) const {
    int c = 0;
    for (const Node& n : nodes) c += n.op == op;
    return c;
  }
  constexpr int count_flag(std::uint8_t flag) const {
    int c = 0;
    for (const Node& n : nodes) c += (n.flags & flag) != 0;
    return c;
  }

  // ---- names ---------------------------------------------------------------------------
  // A node's name is its scope path and leaf joined by '.', e.g. `enc.3.attn.w_q`.
  // Backward nodes carry the scope and leaf of the node they differentiate.

  constexpr std::string_view sym_name(SymId id) const {
    for (const SymEntry& s : syms)
      if (s.id == id) return s.name;
    return "?";
  }
  constexpr std::string_view dim_name(SymId id) const {
    for (const SymEntry& s : dim_names)
      if (s.id == id) return s.name;
    return "?";
  }
  // A dim as text: `heads*head_dim`, `2*batch*seq`, `512` (a named dim prints its name).
  std::string dim_text(const DimV& d) const {
    std::string t;
    const std::int64_t plain = d.plain_coef();
    if (plain != 1 || (d.nsym == 0 && d.nname == 0)) t = std::to_string(plain);
    d.for_each_factor([&](bool is_name, int k) {
      if (!t.empty()) t += '*';
      t += is_name ? dim_name(d.name[k]) : sym_name(d.sym[k]);
    });
    return t;
  }

  // Writes the name of scope `sc` followed by `leaf` into buf; returns the length (or -1).
  template <std::size_t N>
  constexpr int write_name(int sc, std::string_view leaf, char (&buf)[N]) const {
    int parts[64] = {};
    int np = 0;
    for (int s = sc; s > 0 && np < 64; s = scopes[static_cast<std::size_t>(s)].parent)
      parts[np++] = s;
    std::size_t len = 0;
    auto put = [&](std::string_view w) {
      if (len > 0 && len < N) buf[len++] = '.';
      for (char c : w)
        if (len < N) buf[len++] = c;
    };
    for (int k = np - 1; k >= 0; --k) {
      const ScopeEntry& e = scopes[static_cast<std::size_t>(parts[k])];
      if (e.index >= 0) {
        char digits[12] = {};
        int nd = 0;
        int v = e.index;
        do {
          digits[nd++] = static_cast<char>('0' + v % 10);
          v /= 10;
        } while (v > 0);
        char rev[12] = {};
        for (int d = 0; d < nd; ++d) rev[d] = digits[nd - 1 - d];
        put(std::string_view(rev, static_cast<std::size_t>(nd)));
      } else {
        put(e.word);
      }
    }
    if (!leaf.empty()) put(leaf);
    return len >= N ? -1 : static_cast<int>(len);
  }

  constexpr bool name_equals(int n, std::string_view name) const {
    const Node& nd = node(n);
    if (name.size() < nd.leaf.size() || name.substr(name.size() - nd.leaf.size()) != nd.leaf)
      return false;
    char buf[256] = {};
    const int len = write_name(nd.scope, nd.leaf, buf);
    return len >= 0 && std::string_view(buf, static_cast<std::size_t>(len)) == name;
  }

  // The index of the node called `name` (an input, a parameter or a named node); -1 if none.
  // Inputs and parameters win over intermediate nodes that happen to share their name.
  constexpr int find(std::string_view name) const {
    int fallback = -1;
    for (int n = 0; n < size(); ++n) {
      if (!name_equals(n, name)) continue;
      if (node(n).flags & (kFlagInput | kFlagParam)) return n;
      if (fallback < 0 && !(node(n).flags & kFlagBackward)) fallback = n;
    }
    return fallback;
  }

  // The node of the output called `name`; `grad/<name>` finds a parameter's gradient.
  constexpr int output(std::string_view name) const {
    for (const OutputEntry& o : outputs)
      if (o.grad_of < 0 && o.name == name) return o.node;
    if (name.substr(0, kGradPrefix.size()) == kGradPrefix) {
      const int p = find(name.substr(kGradPrefix.size()));
      for (const OutputEntry& o : outputs)
        if (p >= 0 && o.grad_of == p) return o.node;
    }
    return -1;
  }
  // The gradient output of node `p`, or -1.
  constexpr int grad_output(int p) const {
    for (const OutputEntry& o : outputs)
      if (o.grad_of == p) return o.node;
    return -1;
  }

  std::string name(int n) const {
    const Node& nd = node(n);
    char buf[256] = {};
    const int len = write_name(nd.scope, nd.leaf, buf);
    std::string out =
        len < 0 ? std::string("<long name>") : std::string(buf, static_cast<std::size_t>(len));
    if (nd.flags & kFlagRecompute) return std::string(kRecomputePrefix) + out;
    return (nd.flags & kFlagBackward) ? std::string(kGradPrefix) + out : out;
  }
  std::string scope_name(int scope) const {
    char buf[256] = {};
    const int len = write_name(scope, {}, buf);
    return len < 0 ? std::string() : std::string(buf, static_cast<std::size_t>(len));
  }
};

}  // namespace stag

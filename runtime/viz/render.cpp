// Rendering DOT in-process with libgvc/libcgraph, and the registry-backed parts of node labels.
// Graphviz reports errors through a process-wide callback and keeps one context per process,
// so renders are serialised by a mutex; each render frees its graph, layout and output on
// every path (checked under AddressSanitizer).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <vector>

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <stag/ops/registry.hpp>
#include <stag/runtime/viz/render.hpp>

namespace stag {

namespace {

struct FormatEntry {
  ImageFormat format;
  std::string_view name;
};
constexpr FormatEntry kFormats[] = {{ImageFormat::svg, "svg"},
                                    {ImageFormat::png, "png"},
                                    {ImageFormat::pdf, "pdf"},
                                    {ImageFormat::dot, "dot"}};

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string axes_text(std::uint32_t mask) {
  std::string s;
  for (int a = 0; a < 32; ++a)
    if (mask & (1u << a)) {
      if (!s.empty()) s += ',';
      s += std::to_string(a);
    }
  return s;
}

// Attribute text per op, as each op's header documents its Attrs slots.
std::string op_detail(const GraphView& g, int n) {
  const Node& nd = g.node(n);
  const Attrs& a = g.attr(n);
  switch (op_id(nd.op)) {
    case OpId::constant:
      return number_text(a.f[0]);
    case OpId::pow_scalar:
      return number_text(a.f[0]);
    case OpId::matmul:
      if (a.i[0] || a.i[1])
        return std::string(a.i[0] ? "a\u1d40" : "a") + "\u00b7" + (a.i[1] ? "b\u1d40" : "b");
      return "";
    case OpId::permute: {
      std::string s = "(";
      for (int k = 0; k < g.shape(n).rank; ++k) {
        if (k > 0) s += ',';
        s += std::to_string(a.i[k]);
      }
      return s + ")";
    }
    case OpId::softmax:
    case OpId::log_softmax:
    case OpId::softmax_backward:
    case OpId::log_softmax_backward:
      return nd.attr >= 0 ? "axis " + std::to_string(a.i[0]) : "";
    case OpId::sum:
    case OpId::mean:
    case OpId::max:
      return nd.attr >= 0 ? "axes " + axes_text(static_cast<std::uint32_t>(a.i[0])) +
                                (a.i[1] ? " keepdim" : "")
                          : "";
    case OpId::unary_backward:
      if (a.i[0] >= 0 && a.i[0] < kOpCount)
        return std::string(op_info(OpCode{static_cast<std::uint16_t>(a.i[0])}).label);
      return "";
    default:
      return "";
  }
}

// Dropout's salt (i[0]; i[2] for the fused attention ops, whose probabilities' dropout is
// in the op) only picks the node's random stream: two layers that differ in it alone have the
// same structure.
void fold_attrs(const GraphView& g, int n, Attrs& a) {
  switch (op_id(g.node(n).op)) {
    case OpId::dropout:
      a.i[0] = 0;
      break;
    case OpId::attention:
    case OpId::attention_backward:
    case OpId::attention_backward_kv:
      a.i[2] = 0;
      break;
    default:
      break;
  }
}

std::string_view registry_name(OpCode c) {
  return c.value < kOpCount ? op_info(c).name : "?";
}
std::string_view registry_label(OpCode c) {
  return c.value < kOpCount ? op_info(c).label : "?";
}

// Graphviz's messages for the render in progress (guarded by render_mutex).
std::mutex render_mutex;
std::string graphviz_messages;
int collect_message(char* msg) {
  graphviz_messages += msg;
  return 0;
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

struct GvcDeleter {
  void operator()(GVC_t* c) const { gvFreeContext(c); }
};
struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};

}  // namespace

std::optional<ImageFormat> parse_image_format(std::string_view name) {
  for (const FormatEntry& f : kFormats)
    if (f.name == name) return f.format;
  return std::nullopt;
}

std::string_view image_format_name(ImageFormat f) {
  for (const FormatEntry& e : kFormats)
    if (e.format == f) return e.name;
  return "?";
}

ImageFormat image_format_of(std::string_view path) {
  const std::size_t dot = path.rfind('.');
  std::string ext =
      dot == std::string_view::npos ? std::string() : std::string(path.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (const auto f = parse_image_format(ext)) return *f;
  throw Error("stag: cannot tell the picture format of '" + std::string(path) +
              "' from its extension; use .svg, .png, .pdf or .dot, or name the format");
}

DotOptions dot_options() {
  DotOptions o;
  o.ops = DotOps{&registry_name, &registry_label, &op_detail, &fold_attrs};
  return o;
}

std::string bytes_text(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, kUnits[u]);
  return buf;
}

DotAnnotations bytes_annotations(const GraphView& g,
                                 const std::map<std::string, std::int64_t, std::less<>>& dims) {
  auto value_of = [&](SymId id) {
    const std::string_view name = g.sym_name(id);
    const auto it = dims.find(name);
    if (it == dims.end())
      throw Error("stag: sizes in bytes need a value for symbol '" + std::string(name) +
                  "' (e.g. " + std::string(name) + "=8)");
    if (it->second <= 0)
      throw Error("stag: symbol '" + std::string(name) + "' must be positive, got " +
                  std::to_string(it->second));
    return static_cast<double>(it->second);
  };
  DotAnnotations a;
  std::string title;
  for (const SymEntry& s : g.syms) {
    const auto it = dims.find(s.name);
    if (it != dims.end())
      title += (title.empty() ? "" : ", ") + std::string(s.name) + "=" + std::to_string(it->second);
  }
  a.title = "output bytes" + (title.empty() ? std::string() : " at " + title);
  std::vector<double> bytes(static_cast<std::size_t>(g.size()));
  double most = 0;
  for (int n = 0; n < g.size(); ++n) {
    const ShapeV& s = g.shape(n);
    double b = static_cast<double>(dtype_size(g.node(n).dtype));
    for (int i = 0; i < s.rank; ++i) {
      b *= static_cast<double>(s.dims[i].coef);
      for (int k = 0; k < s.dims[i].nsym; ++k) b *= value_of(s.dims[i].sym[k]);
    }
    bytes[static_cast<std::size_t>(n)] = b;
    most = std::max(most, b);
  }
  for (int n = 0; n < g.size(); ++n) {
    const double b = bytes[static_cast<std::size_t>(n)];
    a.lines[n].push_back(bytes_text(b));
    a.heat[n] = most > 0 ? b / most : 0.0;
  }
  return a;
}

std::string render(std::string_view dot, ImageFormat format) {
  if (format == ImageFormat::dot) return std::string(dot);
  const std::string text(dot);  // Graphviz wants a NUL-terminated string
  const std::lock_guard<std::mutex> lock(render_mutex);
  graphviz_messages.clear();
  const agusererrf previous = agseterrf(&collect_message);
  struct RestoreErrf {
    agusererrf f;
    ~RestoreErrf() { agseterrf(f); }
  } restore{previous};
  agreseterrors();

  // NOTE: one context serves every render. Graphviz 2.42's pango plugin caches a pointer to a
  // font name owned by the context; freeing the context between renders leaves it dangling
  // (AddressSanitizer reports a use after free in the next text measurement).
  static const std::unique_ptr<GVC_t, GvcDeleter> gvc(gvContext());
  if (!gvc) throw Error("stag: Graphviz could not create a context");
  const std::unique_ptr<Agraph_t, GraphDeleter> graph(agmemread(text.c_str()));
  if (!graph)
    throw Error(
        "stag: Graphviz could not read the DOT text: " +
        (graphviz_messages.empty() ? std::string("(no message)") : trimmed(graphviz_messages)));
  if (gvLayout(gvc.get(), graph.get(), "dot") != 0)
    throw Error("stag: Graphviz could not lay out the graph: " + trimmed(graphviz_messages));
  char* data = nullptr;
  unsigned int length = 0;
  const std::string fmt(image_format_name(format));
  const int rc = gvRenderData(gvc.get(), graph.get(), fmt.c_str(), &data, &length);
  std::string bytes = (rc == 0 && data != nullptr) ? std::string(data, length) : std::string();
  if (data != nullptr) gvFreeRenderData(data);
  gvFreeLayout(gvc.get(), graph.get());
  if (rc != 0 || bytes.empty())
    throw Error(
        "stag: Graphviz could not render " + fmt + ": " +
        (graphviz_messages.empty() ? std::string("(no message)") : trimmed(graphviz_messages)));
  return bytes;
}

void render_to_file(std::string_view dot, const std::string& path,
                    std::optional<ImageFormat> format) {
  const ImageFormat f = format ? *format : image_format_of(path);
  const std::string bytes = render(dot, f);
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error("stag: cannot open '" + path + "' for writing");
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw Error("stag: could not write '" + path + "'");
}

void draw(const GraphView& g, const std::string& path, DotOptions opts) {
  const DotOptions defaults = dot_options();
  if (!opts.ops.name) opts.ops.name = defaults.ops.name;
  if (!opts.ops.label) opts.ops.label = defaults.ops.label;
  if (!opts.ops.detail) opts.ops.detail = defaults.ops.detail;
  if (!opts.ops.fold_attrs) opts.ops.fold_attrs = defaults.ops.fold_attrs;
  render_to_file(to_dot(g, opts), path);
}

void draw_model_svg(const GraphView& g, const std::string& path, bool collapsed,
                    std::string_view title) {
  DotOptions o = dot_options();
  o.collapse = collapsed;
  // The forward-to-backward links of a big training graph slow the layout about 20-fold.
  o.gradient_links = (collapsed ? fold_repeats(g, o.ops).drawn_nodes() : g.size()) <= 600;
  o.title = title.empty() ? std::string(collapsed ? "model graph (repeated blocks drawn once)"
                                                  : "model graph")
                          : std::string(title);
  render_to_file(to_dot(g, o), path);
}

}  // namespace stag

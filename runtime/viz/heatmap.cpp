// Attention heatmaps: layout (panels in a grid, tick labels, a colour bar) and the SVG text.
// Every length is in pixels; cells are whole pixels so neighbouring cells leave no seams.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <stag/runtime/viz/heatmap.hpp>
#include <stag/runtime/session.hpp>
#include <stag/runtime/viz/svg.hpp>

namespace stag {

namespace {

constexpr double kMargin = 16, kGap = 28, kPanelTitle = 18, kCaption = 26;
constexpr double kBarWidth = 14, kBarGap = 24, kBarLabels = 56;

// Tick labels are cut to this many characters (a long word would push the grid aside).
std::string short_label(const std::string& s) {
  constexpr std::size_t kMax = 14;
  if (s.size() <= kMax) return s;
  std::size_t cut = kMax - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 start
  return s.substr(0, cut) + "\u2026";
}

std::vector<std::string> positions(std::int64_t n) {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(std::to_string(i));
  return out;
}

// Roughly how wide a label is drawn at `font` px (proportional fonts average ~0.6 em per char).
double label_width(const std::vector<std::string>& labels, double font) {
  std::size_t most = 0;
  for (const std::string& l : labels) {
    std::size_t chars = 0;
    for (const char c : short_label(l)) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    most = std::max(most, chars);
  }
  return static_cast<double>(most) * font * 0.62 + 6;
}

}  // namespace

std::string attention_heatmap_svg(const Array& weights, const HeatmapOptions& opts) {
  if (weights.dtype() != DType::f32 && weights.dtype() != DType::f64)
    throw Error("stag: attention heatmap: weights must be f32 or f64, got " + weights.describe());
  if (weights.rank() != 2 && weights.rank() != 3)
    throw Error(
        "stag: attention heatmap: weights must be [heads, q_len, k_len] or [q_len, k_len], got " +
        weights.shape_string());
  const std::int64_t heads = weights.rank() == 3 ? weights.dim(0) : 1, nq = weights.dim(-2),
                     nk = weights.dim(-1);
  if (heads == 0 || nq == 0 || nk == 0)
    throw Error("stag: attention heatmap: nothing to draw in weights " + weights.shape_string());
  auto check_labels = [](const std::vector<std::string>& l, std::int64_t n, const char* what,
                         const char* whats, const char* dim) {
    if (!l.empty() && static_cast<std::int64_t>(l.size()) != n)
      throw Error("stag: attention heatmap: " + std::to_string(l.size()) + " " + what +
                  " labels for " + std::to_string(n) + " " + whats + " (the weights' " + dim +
                  " dim)");
  };
  check_labels(opts.queries, nq, "query", "queries", "second to last");
  check_labels(opts.keys, nk, "key", "keys", "last");
  if (!opts.panel_titles.empty() && static_cast<std::int64_t>(opts.panel_titles.size()) != heads)
    throw Error("stag: attention heatmap: " + std::to_string(opts.panel_titles.size()) +
                " panel titles for " + std::to_string(heads) + " heads");
  const bool key_words = !opts.keys.empty(),
             query_words = !opts.queries.empty() || (key_words && nq == nk);
  const std::vector<std::string> keys = opts.keys.empty() ? positions(nk) : opts.keys;
  const std::vector<std::string> queries = !opts.queries.empty()              ? opts.queries
                                           : (!opts.keys.empty() && nq == nk) ? opts.keys
                                                                              : positions(nq);

  // The colour scale: 0 .. the largest finite weight (or the caller's top).
  const std::vector<double> w = weights.to_doubles();
  double top = 0;
  std::int64_t non_finite = 0;
  for (const double v : w) {
    if (!std::isfinite(v))
      ++non_finite;
    else
      top = std::max(top, v);
  }
  if (opts.max) top = *opts.max;
  if (!(top > 0)) top = 1;

  // Layout.
  const double cell =
      opts.cell > 0
          ? opts.cell
          : std::clamp(std::floor(320.0 / static_cast<double>(std::max(nq, nk))), 2.0, 24.0);
  const double font = std::clamp(cell * 0.8, 7.0, 11.0);
  const int stride =
      std::max(1, static_cast<int>(std::ceil((font + 1) / cell)));  // label every n-th cell
  const double row_labels = label_width(queries, font), col_labels = label_width(keys, font);
  const double grid_w = cell * static_cast<double>(nk), grid_h = cell * static_cast<double>(nq);
  const double panel_w = row_labels + grid_w, panel_h = kPanelTitle + grid_h + col_labels;
  const int columns =
      static_cast<int>(std::min<std::int64_t>(heads, opts.columns > 0 ? opts.columns : 4));
  const int rows = static_cast<int>((heads + columns - 1) / columns);
  const double top_y = kMargin + (opts.title.empty() && non_finite == 0 ? 0 : kCaption);
  const double panels_w = columns * panel_w + (columns - 1) * kGap;
  const double width = kMargin + panels_w + kBarGap + kBarWidth + kBarLabels + kMargin;
  const double height =
      std::max(top_y + rows * panel_h + (rows - 1) * kGap, top_y + kPanelTitle + 200 + 40) +
      kMargin;

  std::string s =
      svg::open_document(width, height, opts.title.empty() ? "attention weights" : opts.title);
  if (!opts.title.empty() || non_finite > 0) {
    std::string caption = opts.title;
    if (non_finite > 0)
      caption += (caption.empty() ? "" : "  \u2014  ") + std::to_string(non_finite) +
                 " weights are NaN or infinite (magenta)";
    s += "<text class=\"caption\" x=\"" + svg::num(kMargin) + "\" y=\"" + svg::num(kMargin + 12) +
         "\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(caption) + "</text>\n";
  }

  const double* wp = w.data();
  for (std::int64_t h = 0; h < heads; ++h) {
    const double px = kMargin + static_cast<double>(h % columns) * (panel_w + kGap);
    const double py = top_y + static_cast<double>(h / columns) * (panel_h + kGap);
    const double gx = px + row_labels, gy = py + kPanelTitle;
    const std::string title = opts.panel_titles.empty()
                                  ? "head " + std::to_string(h)
                                  : opts.panel_titles[static_cast<std::size_t>(h)];
    s += "<g class=\"panel\" data-head=\"" + std::to_string(h) + "\">\n";
    s += "<text x=\"" + svg::num(gx) + "\" y=\"" + svg::num(py + 12) + "\" font-weight=\"bold\">" +
         xml_escape(title) + "</text>\n";
    s += "<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
    for (std::int64_t q = 0; q < nq; ++q)
      for (std::int64_t k = 0; k < nk; ++k) {
        const double v = *wp++;
        const svg::Rgb c = std::isfinite(v) ? svg::weight_colour(v / top) : svg::kNonFiniteColour;
        s += "<rect x=\"" + svg::num(gx + cell * static_cast<double>(k)) + "\" y=\"" +
             svg::num(gy + cell * static_cast<double>(q)) + "\" width=\"" + svg::num(cell) +
             "\" height=\"" + svg::num(cell) + "\" fill=\"" + c.hex() + "\"";
        if (opts.tooltips) {
          char value[32];
          std::snprintf(value, sizeof value, "%.4g", v);
          // "query 2 “cat” → key 0 “the”: 0.25" (the words only where labels were given).
          auto who = [](const char* what, std::int64_t i, bool words, const std::string& label) {
            return what + std::to_string(i) +
                   (words ? " \u201c" + xml_escape(label) + "\u201d" : std::string());
          };
          s += "><title>" + who("query ", q, query_words, queries[static_cast<std::size_t>(q)]) +
               " \u2192 " + who("key ", k, key_words, keys[static_cast<std::size_t>(k)]) + ": " +
               value + "</title></rect>\n";
        } else {
          s += "/>\n";
        }
      }
    s += "</g>\n";
    s += "<rect x=\"" + svg::num(gx) + "\" y=\"" + svg::num(gy) + "\" width=\"" + svg::num(grid_w) +
         "\" height=\"" + svg::num(grid_h) +
         "\" fill=\"none\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n";
    // Query labels left of the rows, key labels under the columns (reading upwards).
    s += "<g class=\"query-labels\" font-size=\"" + svg::num(font) + "\" text-anchor=\"end\">\n";
    for (std::int64_t q = 0; q < nq; q += stride)
      s += "<text x=\"" + svg::num(gx - 3) + "\" y=\"" +
           svg::num(gy + cell * (static_cast<double>(q) + 0.5)) + "\" dy=\"0.35em\">" +
           xml_escape(short_label(queries[static_cast<std::size_t>(q)])) + "</text>\n";
    s +=
        "</g>\n<g class=\"key-labels\" font-size=\"" + svg::num(font) + "\" text-anchor=\"end\">\n";
    for (std::int64_t k = 0; k < nk; k += stride) {
      const double x = gx + cell * (static_cast<double>(k) + 0.5), y = gy + grid_h + 3;
      s += "<text transform=\"translate(" + svg::num(x) + "," + svg::num(y) +
           ") rotate(-90)\" dy=\"0.35em\">" +
           xml_escape(short_label(keys[static_cast<std::size_t>(k)])) + "</text>\n";
    }
    s += "</g>\n</g>\n";
  }

  // The colour bar: the scale's colours from 0 (bottom) to the top value, with round ticks.
  const double bx = kMargin + panels_w + kBarGap, by = top_y + kPanelTitle, bh = 200;
  s += "<g class=\"colour-bar\">\n<defs><linearGradient id=\"stag-weight-scale\" x1=\"0\" y1=\"1\" "
       "x2=\"0\" y2=\"0\">\n";
  for (int i = 0; i <= 8; ++i)
    s += "<stop offset=\"" + svg::num(i / 8.0) + "\" stop-color=\"" +
         svg::weight_colour(i / 8.0).hex() + "\"/>\n";
  s += "</linearGradient></defs>\n<rect x=\"" + svg::num(bx) + "\" y=\"" + svg::num(by) +
       "\" width=\"" + svg::num(kBarWidth) + "\" height=\"" + svg::num(bh) +
       "\" fill=\"url(#stag-weight-scale)\" stroke=\"#888888\" stroke-width=\"0.5\"/>\n";
  const std::vector<double> ticks = svg::nice_ticks(0, top, 4);
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : top;
  for (const double t : ticks) {
    const double y = by + bh * (1 - t / top);
    s += "<line x1=\"" + svg::num(bx + kBarWidth) + "\" y1=\"" + svg::num(y) + "\" x2=\"" +
         svg::num(bx + kBarWidth + 4) + "\" y2=\"" + svg::num(y) + "\" stroke=\"#444444\"/>\n";
    s += "<text x=\"" + svg::num(bx + kBarWidth + 6) + "\" y=\"" + svg::num(y) +
         "\" dy=\"0.35em\" font-size=\"10\">" + svg::tick_text(t, step) + "</text>\n";
  }
  s += "<text x=\"" + svg::num(bx) + "\" y=\"" + svg::num(by + bh + 16) +
       "\" font-size=\"10\">weight</text>\n";
  s += "<text x=\"" + svg::num(bx) + "\" y=\"" + svg::num(by + bh + 28) +
       "\" font-size=\"10\">0 = masked</text>\n</g>\n";
  s += svg::kCloseDocument;
  return s;
}

Array attention_weights(const Session& s, std::string_view node, std::int64_t batch_index) {
  const Array a = s.get(node);
  if (a.rank() < 3)
    throw Error("stag: attention weights: node '" + std::string(node) +
                "' should be [batch, heads, q_len, k_len] (or [batch, q_len, k_len]), got " +
                a.shape_string());
  if (a.dtype() != DType::f32 && a.dtype() != DType::f64)
    throw Error("stag: attention weights: node '" + std::string(node) + "' holds " + a.describe() +
                ", not attention weights");
  if (batch_index < 0 || batch_index >= a.dim(0))
    throw Error("stag: attention weights: batch row " + std::to_string(batch_index) + " of node '" +
                std::string(node) + "', which has " + std::to_string(a.dim(0)) + " rows");
  std::int64_t heads = 1;
  for (int d = 1; d < a.rank() - 2; ++d) heads *= a.dim(d);
  Array out(a.dtype(), {heads, a.dim(-2), a.dim(-1)});
  const std::int64_t per_row = out.numel();
  for (std::int64_t i = 0; i < per_row; ++i) out.set(i, a.at(batch_index * per_row + i));
  return out;
}

void write_attention_heatmap(const Session& s, std::string_view node, const std::string& path,
                             HeatmapOptions opts, std::int64_t batch_index) {
  const Array w = attention_weights(s, node, batch_index);
  if (opts.title.empty())
    opts.title = std::string(node) + ", batch row " + std::to_string(batch_index);
  write_text_file(path, attention_heatmap_svg(w, opts));
}

void write_text_file(const std::string& path, std::string_view text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("stag: cannot open '" + path + "' for writing");
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw Error("stag: could not write '" + path + "'");
}

}  // namespace stag

// Training curves: records -> panels of series -> SVG. Long runs are thinned per pixel column
// (first, lowest, highest and last point of each column), so spikes survive and a 100k-step
// log still makes a small file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include <stag/ops/kernel.hpp>
#include <stag/runtime/viz/curves.hpp>
#include <stag/runtime/viz/heatmap.hpp>  // write_text_file
#include <stag/runtime/viz/svg.hpp>

namespace stag {

namespace {

constexpr double kLeft = 70, kRight = 150, kMargin = 14, kCaption = 26, kPanelTitle = 18,
                 kXTicks = 22, kPanelGap = 16;
constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c",
                                    "#9467bd", "#ff7f0e", "#8c564b"};

struct Point {
  double step = 0, value = 0;
};
struct Series {
  std::string split, role, label, colour;  // role: "line", "raw" (faint) or "smoothed"
  double opacity = 1, stroke = 1.5;
  bool markers = false;
  std::vector<Point> points;
};
struct Panel {
  std::string metric, title;
  bool log = false;
  std::vector<Series> series;
};

std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Sorted by step; the last line wins for a repeated (split, step).
std::vector<MetricsRecord> ordered(const std::vector<MetricsRecord>& in) {
  std::map<std::pair<std::string, std::int64_t>, std::size_t> last;
  for (std::size_t i = 0; i < in.size(); ++i) last[{in[i].split, in[i].step}] = i;
  std::vector<MetricsRecord> out;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (last[{in[i].split, in[i].step}] == i) out.push_back(in[i]);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.step < b.step; });
  return out;
}

// "train" first, then the other splits in the order they first appear.
std::vector<std::string> splits_of(const std::vector<MetricsRecord>& rs) {
  std::vector<std::string> out;
  for (const MetricsRecord& r : rs)
    if (std::find(out.begin(), out.end(), r.split) == out.end()) out.push_back(r.split);
  std::stable_partition(out.begin(), out.end(), [](const std::string& s) { return s == "train"; });
  return out;
}

std::vector<Point> values_of(const std::vector<MetricsRecord>& rs, const std::string& key,
                             const std::string& split) {
  std::vector<Point> out;
  for (const MetricsRecord& r : rs)
    if (r.split == split)
      if (const auto v = r.get(key)) out.push_back({static_cast<double>(r.step), *v});
  return out;
}

// Exponential moving average, bias-corrected; non-finite values are skipped (kept as gaps).
// On a log axis it averages log(value) (a geometric mean), so that a loss falling by decades
// is not dragged up by its earlier, larger values; non-positive values are skipped there.
std::vector<Point> smoothed(const std::vector<Point>& pts, double beta, bool log) {
  std::vector<Point> out;
  double ema = 0;
  int n = 0;
  for (const Point& p : pts) {
    if (!std::isfinite(p.value) || (log && p.value <= 0)) {
      out.push_back({p.step, NAN});
      continue;
    }
    ema = beta * ema + (1 - beta) * (log ? std::log(p.value) : p.value);
    ++n;
    const double v = ema / (1 - std::pow(beta, n));
    out.push_back({p.step, log ? std::exp(v) : v});
  }
  return out;
}

// One panel: a series per split that logged `key`.
Panel make_panel(const std::vector<MetricsRecord>& rs, const std::string& key, std::string title,
                 const CurveOptions& opts, bool smooth_train) {
  // smooth_train: draw the train split raw (faint) and smoothed, when it is long enough.
  Panel p{key, std::move(title), key == "loss" && opts.log_loss, {}};
  const std::vector<std::string> splits = splits_of(rs);
  for (std::size_t i = 0; i < splits.size(); ++i) {
    std::vector<Point> pts = values_of(rs, key, splits[i]);
    if (pts.empty()) continue;
    const std::string colour = kPalette[i % std::size(kPalette)];
    const double beta = opts.smoothing >= 0 ? opts.smoothing : (pts.size() > 50 ? 0.9 : 0.0);
    if (smooth_train && splits[i] == "train" && beta > 0 && beta < 1) {
      char label[48];
      std::snprintf(label, sizeof label, "train (EMA %g)", beta);
      p.series.push_back({splits[i], "raw", "train", colour, 0.3, 1.0, false, pts});
      p.series.push_back(
          {splits[i], "smoothed", label, colour, 1.0, 1.8, false, smoothed(pts, beta, p.log)});
    } else {
      p.series.push_back({splits[i], "line", splits[i], colour, 1.0, 1.5,
                          pts.size() <= 200 && splits[i] != "train", std::move(pts)});
    }
  }
  return p;
}

// "tokens_per_s" -> "tokens/s".
std::string rate_title(const std::string& key) {
  return key.substr(0, key.size() - 6) + "/s";
}

struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double map(double v, double pixels_lo, double pixels_hi) const {  // value -> pixel
    const double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi,
                 x = log ? std::log10(v) : v;
    return pixels_lo + (x - a) / (b - a) * (pixels_hi - pixels_lo);
  }
};

// The y range of a panel: its finite values (positive ones on a log axis), padded by 5%.
Scale y_scale(const Panel& p) {
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : p.series)
    for (const Point& pt : s.points)
      if (std::isfinite(pt.value) && (!p.log || pt.value > 0)) {
        lo = std::min(lo, pt.value);
        hi = std::max(hi, pt.value);
      }
  if (!(lo <= hi)) return {p.log ? 0.1 : 0, 1, p.log};
  if (p.log) {
    const double a = std::log10(lo), b = std::log10(hi), pad = b > a ? 0.05 * (b - a) : 0.5;
    return {std::pow(10.0, a - pad), std::pow(10.0, b + pad), true};
  }
  if (hi == lo) {
    const double pad = std::max(std::fabs(lo) * 0.1, 0.5);
    return {lo - pad, hi + pad, false};
  }
  const double pad = 0.05 * (hi - lo);
  return {lo >= 0 && lo - pad < 0 ? 0 : lo - pad, hi + pad, false};
}

// Splits at non-finite values, thins each piece to a few points per pixel column.
std::vector<std::vector<std::pair<double, double>>> pixel_runs(const Series& s, const Scale& xs,
                                                               const Scale& ys, double x0,
                                                               double x1, double y0, double y1) {
  std::vector<std::vector<std::pair<double, double>>> runs(1);
  std::vector<std::pair<double, double>> column;  // points of the current pixel column
  double column_x = NAN;
  auto flush = [&] {
    if (column.empty()) return;
    auto lo = std::min_element(column.begin(), column.end(),
                               [](auto& a, auto& b) { return a.second < b.second; });
    auto hi = std::max_element(column.begin(), column.end(),
                               [](auto& a, auto& b) { return a.second < b.second; });
    std::vector<std::size_t> keep = {0, static_cast<std::size_t>(lo - column.begin()),
                                     static_cast<std::size_t>(hi - column.begin()),
                                     column.size() - 1};
    std::sort(keep.begin(), keep.end());
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    for (const std::size_t k : keep) runs.back().push_back(column[k]);
    column.clear();
  };
  for (const Point& p : s.points) {
    if (!std::isfinite(p.value) || (ys.log && p.value <= 0)) {
      flush();
      if (!runs.back().empty()) runs.emplace_back();
      continue;
    }
    const double x = xs.map(p.step, x0, x1), y = ys.map(p.value, y0, y1);
    if (std::floor(x) != column_x) {
      flush();
      column_x = std::floor(x);
    }
    column.emplace_back(x, y);
  }
  flush();
  if (runs.back().empty()) runs.pop_back();
  return runs;
}

std::string draw_panel(const Panel& p, const Scale& xs, double top, double width, double height) {
  const Scale ys = y_scale(p);
  const double x0 = kLeft, x1 = width - kRight, y0 = top + kPanelTitle, y1 = y0 + height;
  std::string s = "<g class=\"panel\" data-metric=\"" + xml_escape(p.metric) +
                  "\" data-x-domain=\"" + exact(xs.lo) + " " + exact(xs.hi) +
                  "\" data-y-domain=\"" + exact(ys.lo) + " " + exact(ys.hi) + "\" data-y-scale=\"" +
                  (ys.log ? "log" : "linear") + "\">\n";
  s += "<text x=\"" + svg::num(x0) + "\" y=\"" + svg::num(top + 13) + "\" font-weight=\"bold\">" +
       xml_escape(p.title) + "</text>\n";
  s += "<rect class=\"plot-area\" x=\"" + svg::num(x0) + "\" y=\"" + svg::num(y0) + "\" width=\"" +
       svg::num(x1 - x0) + "\" height=\"" + svg::num(height) +
       "\" fill=\"#fbfbfb\" stroke=\"#bbbbbb\"/>\n";
  // Grid and ticks.
  const std::vector<double> yt =
      ys.log ? svg::log_ticks(ys.lo, ys.hi) : svg::nice_ticks(ys.lo, ys.hi, 4);
  const double ystep = yt.size() > 1 ? yt[1] - yt[0] : ys.hi - ys.lo;
  s += "<g class=\"y-ticks\" font-size=\"10\" text-anchor=\"end\">\n";
  for (const double t : yt) {
    const double y = ys.map(t, y1, y0);
    s += "<line x1=\"" + svg::num(x0) + "\" y1=\"" + svg::num(y) + "\" x2=\"" + svg::num(x1) +
         "\" y2=\"" + svg::num(y) + "\" stroke=\"#e4e4e4\"/><text x=\"" + svg::num(x0 - 4) +
         "\" y=\"" + svg::num(y) + "\" dy=\"0.35em\">" +
         xml_escape(svg::tick_text(t, ys.log ? t : ystep)) + "</text>\n";
  }
  const std::vector<double> xt = svg::nice_ticks(xs.lo, xs.hi, 6);
  const double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1;
  s += "</g>\n<g class=\"x-ticks\" font-size=\"10\" text-anchor=\"middle\">\n";
  for (const double t : xt) {
    const double x = xs.map(t, x0, x1);
    s += "<line x1=\"" + svg::num(x) + "\" y1=\"" + svg::num(y1) + "\" x2=\"" + svg::num(x) +
         "\" y2=\"" + svg::num(y1 + 4) + "\" stroke=\"#444444\"/><text x=\"" + svg::num(x) +
         "\" y=\"" + svg::num(y1 + 15) + "\">" + xml_escape(svg::tick_text(t, xstep)) + "</text>\n";
  }
  s += "</g>\n";
  // Series, then markers for non-finite values along the top edge.
  int non_finite = 0;
  for (const Series& se : p.series) {
    const std::string common =
        " data-split=\"" + xml_escape(se.split) + "\" data-role=\"" + se.role + "\"";
    for (const auto& run : pixel_runs(se, xs, ys, x0, x1, y1, y0)) {
      std::string pts;
      for (const auto& [x, y] : run)
        pts += (pts.empty() ? "" : " ") + svg::num(x) + "," + svg::num(y);
      s += "<polyline class=\"series\"" + common + " points=\"" + pts +
           "\" fill=\"none\" stroke=\"" + se.colour + "\" stroke-width=\"" + svg::num(se.stroke) +
           "\" stroke-opacity=\"" + svg::num(se.opacity) + "\" stroke-linejoin=\"round\"/>\n";
      if (se.markers)
        for (const auto& [x, y] : run)
          s += "<circle class=\"point\"" + common + " cx=\"" + svg::num(x) + "\" cy=\"" +
               svg::num(y) + "\" r=\"2.5\" fill=\"" + se.colour + "\"/>\n";
    }
    if (se.role == "smoothed") continue;  // its gaps are the raw series' gaps
    for (const Point& pt : se.points)
      if (!std::isfinite(pt.value)) {
        ++non_finite;
        s += "<path class=\"nonfinite\"" + common + " d=\"M" + svg::num(xs.map(pt.step, x0, x1)) +
             "," + svg::num(y0 + 7) + " l-4,-6 h8 z\" fill=\"#d62728\"><title>step " +
             exact(pt.step) + ": not finite</title></path>\n";
      }
  }
  // Legend, right of the plot.
  double ly = y0 + 8;
  for (const Series& se : p.series) {
    s += "<line x1=\"" + svg::num(x1 + 12) + "\" y1=\"" + svg::num(ly) + "\" x2=\"" +
         svg::num(x1 + 32) + "\" y2=\"" + svg::num(ly) + "\" stroke=\"" + se.colour +
         "\" stroke-width=\"" + svg::num(std::max(2.0, se.stroke)) + "\" stroke-opacity=\"" +
         svg::num(se.opacity) + "\"/><text x=\"" + svg::num(x1 + 38) + "\" y=\"" + svg::num(ly) +
         "\" dy=\"0.35em\" font-size=\"11\">" + xml_escape(se.label) + "</text>\n";
    ly += 16;
  }
  if (non_finite > 0)
    s += "<text x=\"" + svg::num(x1 + 12) + "\" y=\"" + svg::num(ly) +
         "\" dy=\"0.35em\" font-size=\"11\" fill=\"#d62728\">" + std::to_string(non_finite) +
         " not finite (\u25bc)</text>\n";
  return s + "</g>\n";
}

std::string summary(const std::vector<MetricsRecord>& rs) {
  std::string s;
  char buf[96];
  std::snprintf(buf, sizeof buf, "steps %lld\u2013%lld", static_cast<long long>(rs.front().step),
                static_cast<long long>(rs.back().step));
  s += buf;
  const std::vector<Point> train = values_of(rs, "loss", "train");
  for (auto it = train.rbegin(); it != train.rend(); ++it)
    if (std::isfinite(it->value)) {
      std::snprintf(buf, sizeof buf, ", last train loss %.4g", it->value);
      s += buf;
      break;
    }
  for (const std::string& split : splits_of(rs)) {
    if (split == "train") continue;
    const Point* best = nullptr;
    const std::vector<Point> v = values_of(rs, "loss", split);
    for (const Point& p : v)
      if (std::isfinite(p.value) && (!best || p.value < best->value)) best = &p;
    if (!best) continue;
    std::snprintf(buf, sizeof buf, ", best %s loss %.4g at step %lld", split.c_str(), best->value,
                  static_cast<long long>(best->step));
    s += buf;
  }
  return s;
}

}  // namespace

std::string training_curves_svg(const std::vector<MetricsRecord>& records,
                                const CurveOptions& opts) {
  if (records.empty()) throw Error("stag: training curves: no records to draw");
  const std::vector<MetricsRecord> rs = ordered(records);
  std::vector<std::string> keys;  // every logged name, in first-seen order
  for (const MetricsRecord& r : rs)
    for (const auto& [k, v] : r.values)
      if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  auto has = [&](const std::string& k) {
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  };

  std::vector<Panel> panels;
  if (has("loss"))
    panels.push_back(
        make_panel(rs, "loss", opts.log_loss ? "loss (log scale)" : "loss", opts, true));
  if (has("lr")) panels.push_back(make_panel(rs, "lr", "learning rate", opts, false));
  for (const std::string& k : keys)
    if (k.size() > 6 && k.ends_with("_per_s")) {
      panels.push_back(make_panel(rs, k, "throughput (" + rate_title(k) + ")", opts, true));
      break;
    }
  for (const std::string& k : opts.extra) {
    if (!has(k)) {
      std::string names;
      for (const std::string& n : keys) names += (names.empty() ? "" : ", ") + n;
      throw Error("stag: training curves: no '" + k + "' values in the metrics (they have: " +
                  (names.empty() ? std::string("nothing") : names) + ")");
    }
    panels.push_back(make_panel(rs, k, k, opts, false));
  }
  if (panels.empty())
    throw Error("stag: training curves: nothing to draw: no loss, lr or *_per_s values in " +
                std::to_string(records.size()) + " records");

  Scale xs{static_cast<double>(rs.front().step), static_cast<double>(rs.back().step), false};
  if (xs.hi <= xs.lo) {
    xs.lo -= 1;
    xs.hi += 1;
  }
  const double width = std::max(opts.width, kLeft + kRight + 100);
  const double height = std::max(opts.panel_height, 40.0);
  const double per_panel = kPanelTitle + height + kXTicks + kPanelGap;
  const double total_h =
      kMargin + 2 * kCaption + per_panel * static_cast<double>(panels.size()) + 10 + kMargin;
  // Two caption lines: the title, then a summary of the run (steps, last and best losses).
  const std::string caption = opts.title.empty() ? "training curves" : opts.title,
                    line2 = summary(rs);
  std::string s = svg::open_document(width, total_h, caption + ": " + line2);
  s += "<text class=\"caption\" x=\"" + svg::num(kMargin) + "\" y=\"" + svg::num(kMargin + 12) +
       "\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(caption) + "</text>\n";
  s += "<text class=\"summary\" x=\"" + svg::num(kMargin) + "\" y=\"" +
       svg::num(kMargin + 12 + kCaption - 6) + "\" fill=\"#444444\">" + xml_escape(line2) +
       "</text>\n";
  double top = kMargin + 2 * kCaption;
  for (const Panel& p : panels) {
    s += draw_panel(p, xs, top, width, height);
    top += per_panel;
  }
  s += "<text x=\"" + svg::num((kLeft + width - kRight) / 2) + "\" y=\"" + svg::num(top) +
       "\" text-anchor=\"middle\">step</text>\n";
  s += svg::kCloseDocument;
  return s;
}

void plot_metrics(const std::string& metrics_path, const std::string& svg_path, CurveOptions opts) {
  const std::vector<MetricsRecord> rs = read_metrics(metrics_path);
  if (rs.empty()) throw Error("stag: training curves: " + metrics_path + " has no records");
  if (opts.title.empty()) opts.title = "training curves of " + metrics_path;
  write_text_file(svg_path, training_curves_svg(rs, opts));
}

}  // namespace stag

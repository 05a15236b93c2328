// Training curves as SVG from a metrics log (runtime/train/metrics.hpp's JSON lines): loss per split
// (train raw and smoothed, validation), learning rate, throughput, and any other logged number,
// one panel each over a shared step axis. Written directly, without a plotting library
// (docs/pictures.md says why). To draw another quantity by default, add it to default_panels.
//   stag::plot_metrics("runs/x/metrics.jsonl", "runs/x/curves.svg");
#pragma once

#include <string>
#include <vector>

#include <stag/runtime/train/metrics.hpp>

namespace stag {

struct CurveOptions {
  std::string title = {};     // caption (default "training curves"); a summary line follows it
  double width = 760;         // the picture's width in pixels
  double panel_height = 170;  // each panel's plot area
  bool log_loss = false;      // a logarithmic loss axis (non-positive losses are left out)
  // The train loss and throughput are drawn raw (faint) and as an exponential moving average
  // with this factor, bias-corrected like the progress line (of log(loss) on a log axis).
  // Negative: 0.9 when there are more than 50 train values, else no smoothing; 0: none.
  double smoothing = -1;
  std::vector<std::string> extra = {};  // more logged numbers, one panel each ("accuracy")
};

// The SVG text. Records are ordered by step (stable); when a (split, step) pair occurs twice,
// as after a resumed run that did not truncate its log, the later line wins. Non-finite values
// (null in the file) break the line and are marked with a red triangle at the panel's top.
// stag::Error when nothing can be drawn (no loss, lr or *_per_s values) or an `extra` name
// has no values (the message lists the names the records have).
std::string training_curves_svg(const std::vector<MetricsRecord>& records,
                                const CurveOptions& opts = {});

// Reads `metrics_path` (read_metrics) and writes the chart to `svg_path`.
void plot_metrics(const std::string& metrics_path, const std::string& svg_path,
                  CurveOptions opts = {});

}  // namespace stag

// stag-plot: draws a training run's metrics log (JSON lines, runtime/train/metrics.hpp) as an SVG
// chart: loss per split, learning rate, throughput, and any other logged number asked for.
//   stag-plot --metrics runs/x/metrics.jsonl -o runs/x/curves.svg --also accuracy
// To draw a new logged quantity by default, see runtime/viz/curves.hpp.
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stag/runtime/viz/curves.hpp>
#include <stag/runtime/viz/heatmap.hpp>

#include "cli_common.hpp"

namespace {

using namespace stag;

int run(int argc, char** argv) {
  CLI::App app{
      "stag-plot: draws training curves (loss, learning rate, throughput) from a metrics log as "
      "SVG"};
  std::string metrics, output;
  CurveOptions o;
  app.add_option("--metrics", metrics,
                 "The metrics file (JSON lines, one record per step or evaluation)")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-o,--output", output, "The SVG file to write")->required();
  app.add_option("--title", o.title, "The chart's caption (default: the file and a summary)");
  app.add_option("--also", o.extra,
                 "Another logged number to draw, e.g. --also accuracy (repeatable)");
  app.add_flag("--log-loss", o.log_loss, "A logarithmic loss axis");
  app.add_option("--smooth", o.smoothing,
                 "EMA factor for the train loss in [0, 1) (default: 0.9 when there are over 50 "
                 "points; 0: off)")
      ->check(CLI::Range(0.0, 0.999));
  app.add_option("--width", o.width, "Width in pixels")
      ->capture_default_str()
      ->check(CLI::Range(300.0, 4000.0));
  app.add_option("--panel-height", o.panel_height, "Height of each panel in pixels")
      ->capture_default_str()
      ->check(CLI::Range(60.0, 2000.0));
  CLI11_PARSE(app, argc, argv);

  const std::vector<MetricsRecord> records = read_metrics(metrics);
  if (records.empty()) throw Error("stag: " + metrics + " has no records yet");
  int train = 0, other = 0;
  for (const MetricsRecord& r : records) (r.split == "train" ? train : other) += 1;
  plot_metrics(metrics, output, o);
  std::fprintf(stderr, "stag-plot: wrote %s (%d train records, %d others)\n", output.c_str(), train,
               other);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return stag::cli::guarded_main("stag-plot", [&] { return run(argc, argv); });
}

// Training metrics: a JSON-lines log (one object per step or evaluation, flushed per line,
// appended to by resumed runs) and a progress reporter for humans (one updating line on a
// terminal, plain lines in a log). To log a new quantity, set it on the record; nothing else.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stag {

// One line of the metrics log: {"step": 120, "epoch": 2, "split": "train", "loss": 2.31, ...}.
struct MetricsRecord {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::string split = "train";
  std::vector<std::pair<std::string, double>> values = {};  // written in this order

  // Sets (or replaces) a named number; "step", "epoch" and "split" are reserved.
  MetricsRecord& set(std::string_view name, double value);
  std::optional<double> get(std::string_view name) const;
};

// The record as one line of JSON, without the newline. Numbers are written in the shortest
// form that reads back to the same double; NaN and infinities become null (JSON has neither).
std::string metrics_json(const MetricsRecord& r);
// The reverse; null reads back as NaN. stag::Error on anything that is not such a line.
MetricsRecord parse_metrics_json(std::string_view line);
// Every record of a metrics file; stag::Error naming the line number of a bad line.
std::vector<MetricsRecord> read_metrics(const std::string& path);
// Drops the records with a step above `step` (atomically, by rewriting the file), so a run
// resumed from an earlier checkpoint does not leave lines from the abandoned steps behind.
// Does nothing when the file does not exist.
// Lines that do not parse are dropped too (counted on stderr).
void truncate_metrics(const std::string& path, std::int64_t step);

// Appends records to a JSON-lines file, one line per record, each with a single write(2) to a
// file opened with O_APPEND: lines of two writers never interleave or overwrite each other.
class MetricsLog {
 public:
  // Opens `path` for appending, creating it; `append = false` empties it first (and appends
  // from then on).
  explicit MetricsLog(const std::string& path, bool append = true);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const MetricsRecord& r);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

struct ProgressOptions {
  enum class Mode { automatic, terminal, plain };
  Mode mode = Mode::automatic;  // automatic: terminal when `out` is a tty
  std::FILE* out = stderr;
  std::int64_t total_steps = 0;        // 0: unknown (no "/total", no ETA)
  std::int64_t every_steps = 100;      // plain: a line at every multiple of this step...
  double every_seconds = 30;           // ...or when this long passed since the last line
  double redraw_seconds = 0.2;         // terminal: the shortest time between redraws
  double loss_smoothing = 0.98;        // EMA factor of the shown loss (bias-corrected)
  int rate_window = 50;                // tokens/s and ETA from the last this many steps
  std::function<double()> clock = {};  // seconds; default std::chrono::steady_clock
};

// Step-by-step progress for humans:
//   step 1200/5000  epoch 3  loss 2.3412  lr 3.00e-04  12.3k tok/s  ETA 5m12s
class Progress {
 public:
  explicit Progress(ProgressOptions opts = {});
  ~Progress();  // finish()
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Records one step: its loss, learning rate and how many tokens (or samples) it processed.
  // A non-finite loss is counted and shown, not mixed into the smoothed loss.
  void update(std::int64_t step, std::int64_t epoch, double loss, double lr, double tokens = 0);
  // Prints a message on its own line (e.g. validation results) without garbling the status.
  void note(std::string_view text);
  // A new step count for "/total" and the ETA (a time box shortened the run); 0: unknown.
  void set_total(std::int64_t total_steps) { opts_.total_steps = total_steps; }
  // Data parallelism: the world size, and each step's communication (seconds in collectives
  // and seconds the step waited for them), shown as "2 ranks  comm 12% (exposed 3%)".
  void set_world(int ranks) { ranks_ = ranks; }
  void update_comm(double step_seconds, double comm_seconds, double waited_seconds);
  // Ends the status line (terminal) or prints the last status (plain) if not shown yet.
  void finish();

  std::string status() const;
  double smoothed_loss() const;      // NaN before the first finite loss
  double tokens_per_second() const;  // over the window; 0 before two steps
  double eta_seconds() const;        // -1 when unknown
  bool terminal() const { return terminal_; }

 private:
  int ranks_ = 1;
  double step_s_ = 0, comm_s_ = 0, waited_s_ = 0;  // summed over the shown steps
  struct Sample {
    double time;
    std::int64_t step;
    double tokens;  // cumulative
  };
  void emit();
  double now() const;

  ProgressOptions opts_;
  bool terminal_ = false;
  std::deque<Sample> window_;
  double tokens_ = 0;
  double ema_ = 0;
  std::int64_t finite_steps_ = 0, nonfinite_steps_ = 0;
  std::int64_t step_ = 0, epoch_ = 0;
  double lr_ = 0;
  bool any_ = false, shown_ = false, line_open_ = false, finished_ = false;
  double last_emit_ = 0;
};

// "42s", "4m05s", "2h03m": what ETAs print.
std::string format_duration(double seconds);
// "950", "12.3k", "4.56M": what rates print.
std::string format_count(double x);

}  // namespace stag

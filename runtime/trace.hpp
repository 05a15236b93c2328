// Timelines of steps (SessionOptions::trace): each traced step's nodes as Chrome trace events
// (the JSON that Perfetto and chrome://tracing open), one lane per worker thread, with every
// node's op, output shape, bytes, estimated GFLOP and GFLOP/s and kernel. Also the FLOP
// estimate the planner's recompute search and the trace share. To add a field to the events,
// extend TraceRecorder::add_step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <stag/runtime/plan.hpp>

namespace stag {

// Estimated floating-point operations of running node n once (from the plan's concrete dims):
// multiply-adds for matmuls and attention, a few per element for transcendental and
// normalising ops, one per element otherwise.
std::int64_t estimated_flops(const GraphView& g, const Plan& p, int n);

// What a trace file holds, read back: node events, traced runs (their `run` indices) and
// worker lanes. stag-train and stag-bench print it after a traced run. A stag::Error naming the
// path when the file cannot be read or is not a trace.
struct TraceSummary {
  std::int64_t events = 0, runs = 0, lanes = 0;
};
TraceSummary read_trace_summary(const std::string& path);

// One timeline. Sessions of a process that trace to the same path share one (for_path): the
// Trainer's training, micro-batch and update sessions write one file, on one clock, their
// runs counted together against trace_steps. Safe to use from several threads.
class TraceRecorder {
 public:
  // The recorder of `path`, made at the first request and shared while any holder lives.
  static std::shared_ptr<TraceRecorder> for_path(const std::string& path);
  // The events of the plan's last traced step (Plan::spans), placed on the timeline at the
  // time that step began. Each event's args hold `run` (the recorder's count of traced runs
  // before it, which tells the runs of several sessions apart) and the run's `step`.
  void add_step(const Plan& p, std::uint64_t step);
  // Whether the next run should be traced (fewer than `limit` runs recorded).
  bool wants(int limit) const;
  // add_step, then write(path), as one step of the shared timeline.
  void record(const Plan& p, std::uint64_t step, const std::string& path);
  int steps() const;
  // {"traceEvents": [...], "displayTimeUnit": "ms"}, with a thread_name event per lane.
  std::string json() const;
  // Writes json() to `path` (through a temporary file renamed over it); a stag::Error naming
  // the path when that fails.
  void write(const std::string& path) const;

 private:
  mutable std::mutex mu_;  // the events and counts
  std::mutex file_mu_;     // record(): the file's writer
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::string events_;  // comma-separated event objects
  int max_lane_ = -1;
  int steps_ = 0;
};

}  // namespace stag

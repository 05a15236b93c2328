// Timelines of steps (SessionOptions::trace): each traced step's nodes as Chrome trace events
// (the JSON that Perfetto and chrome://tracing open), one lane per worker thread, with every
// node's op, output shape, bytes, estimated GFLOP and GFLOP/s and kernel. Also the FLOP
// estimate the planner's recompute search and the trace share. To add a field to the events,
// extend TraceRecorder::add_step.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include <stag/runtime/plan.hpp>

namespace stag {

// Estimated floating-point operations of running node n once (from the plan's concrete dims):
// multiply-adds for matmuls and attention, a few per element for transcendental and
// normalising ops, one per element otherwise.
std::int64_t estimated_flops(const GraphView& g, const Plan& p, int n);

class TraceRecorder {
 public:
  // The events of the plan's last traced step (Plan::spans), placed on the timeline at the
  // time that step began.
  void add_step(const Plan& p, std::uint64_t step);
  int steps() const { return steps_; }
  // {"traceEvents": [...], "displayTimeUnit": "ms"}, with a thread_name event per lane.
  std::string json() const;
  // Writes json() to `path` (through a temporary file renamed over it); a stag::Error naming
  // the path when that fails.
  void write(const std::string& path) const;

 private:
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  std::string events_;  // comma-separated event objects
  int max_lane_ = -1;
  int steps_ = 0;
};

}  // namespace stag

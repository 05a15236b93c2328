// Chrome trace events of traced steps (see trace.hpp), and the FLOP estimate of a node.
#include <unistd.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <stag/ops/registry.hpp>
#include <stag/runtime/trace.hpp>

namespace stag {

namespace {

constexpr auto idx = [](int i) { return static_cast<std::size_t>(i); };

// A JSON string literal of s (quotes, backslashes and control characters escaped).
std::string json_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string dims_text(const TensorView& v) {
  std::string s = "[";
  for (int d = 0; d < v.rank; ++d) s += (d ? ", " : "") + std::to_string(v.dims[d]);
  return s + "] " + std::string(dtype_name(v.dtype));
}

}  // namespace

std::int64_t estimated_flops(const GraphView& g, const Plan& p, int n) {
  const Node& nd = g.node(n);
  const TensorView& out = p.nodes[idx(n)].view;
  const std::int64_t elems = out.numel();
  const auto keys = [&](int input) {  // Sk: the second-to-last dim of k
    const TensorView& k = p.nodes[idx(nd.in[input])].view;
    return k.rank > 1 ? k.dims[k.rank - 2] : 1;
  };
  switch (op_id(nd.op)) {
    case OpId::matmul: {
      const TensorView& a = p.nodes[idx(nd.in[0])].view;
      return 2 * elems * (a.rank > 0 ? a.dims[a.rank - 1] : 1);
    }
    case OpId::attention:  // q k^T and p v: 2 Sk (Dk + Dv) per output row, about 4 Sk Dv
      return 4 * elems * keys(1);
    case OpId::attention_backward:  // s and dp again, then dq, dk and dv: about 10 Sk D per row
      return 10 * elems * keys(1);
    case OpId::attention_backward_kv:  // hands out what attention_backward computed
      return 0;
    case OpId::exp:
    case OpId::log:
    case OpId::gelu:
    case OpId::gelu_tanh:
    case OpId::silu:
    case OpId::sigmoid:
    case OpId::tanh:
    case OpId::elu:
      return 8 * elems;
    case OpId::softmax:
    case OpId::log_softmax:
    case OpId::layer_norm:
    case OpId::rms_norm:
    case OpId::rope:
      return 10 * elems;
    default:
      return elems;
  }
}

std::shared_ptr<TraceRecorder> TraceRecorder::for_path(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<TraceRecorder>> recorders;
  const std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<TraceRecorder>& w = recorders[path];
  std::shared_ptr<TraceRecorder> r = w.lock();
  if (!r) {
    r = std::make_shared<TraceRecorder>();
    w = r;
  }
  return r;
}

bool TraceRecorder::wants(int limit) const {
  const std::lock_guard<std::mutex> lock(mu_);
  return steps_ < limit;
}

int TraceRecorder::steps() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return steps_;
}

void TraceRecorder::record(const Plan& p, std::uint64_t step, const std::string& path) {
  const std::lock_guard<std::mutex> lock(file_mu_);  // one writer of the file at a time
  add_step(p, step);
  write(path);
}

void TraceRecorder::add_step(const Plan& p, std::uint64_t step) {
  const std::lock_guard<std::mutex> lock(mu_);
  const double base_us = std::chrono::duration<double, std::micro>(p.traced_at - origin_).count();
  const GraphView& g = p.graph;
  char buf[160];
  for (int n : p.order) {
    const NodeSpan& s = p.spans[idx(n)];
    if (s.start_ns < 0 || s.end_ns < s.start_ns) continue;
    const NodePlan& np = p.nodes[idx(n)];
    const double dur_us = static_cast<double>(s.end_ns - s.start_ns) * 1e-3;
    const double gflop = static_cast<double>(estimated_flops(g, p, n)) * 1e-9;
    const auto bytes = static_cast<double>(np.view.numel()) * dtype_size(np.view.dtype);
    std::string e =
        "{\"name\":" + json_quoted(g.name(n)) + ",\"cat\":" + json_quoted(op_name(g.node(n).op));
    std::snprintf(buf, sizeof buf, ",\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
                  s.lane, base_us + static_cast<double>(s.start_ns) * 1e-3, dur_us);
    e += buf;
    e += ",\"args\":{\"run\":" + std::to_string(steps_) + ",\"step\":" + std::to_string(step) +
         ",\"op\":" + json_quoted(op_name(g.node(n).op)) +
         ",\"shape\":" + json_quoted(dims_text(np.view));
    std::snprintf(buf, sizeof buf, ",\"bytes\":%.0f,\"gflop\":%.6g,\"gflop_per_s\":%.6g", bytes,
                  gflop, dur_us > 0 ? gflop / (dur_us * 1e-6) : 0.0);
    e += buf;
    e += ",\"kernel\":" + json_quoted(np.kernel ? np.kernel->describe() : np.kernel_name) + "}}";
    events_ += (events_.empty() ? "" : ",\n") + e;
    max_lane_ = std::max(max_lane_, s.lane);
  }
  ++steps_;
}

std::string TraceRecorder::json() const {
  const std::lock_guard<std::mutex> lock(mu_);
  std::string s = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  s += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"stag\"}}";
  for (int lane = 0; lane <= max_lane_; ++lane)
    s += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(lane) +
         ",\"args\":{\"name\":\"worker " + std::to_string(lane) + "\"}}";
  if (!events_.empty()) s += ",\n" + events_;
  return s + "\n]}\n";
}

TraceSummary read_trace_summary(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("stag: trace " + path + ": cannot open it");
  TraceSummary t;
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    std::set<std::uint64_t> runs;
    std::set<int> lanes;
    for (const auto& e : j.at("traceEvents")) {
      if (e.at("ph") != "X") continue;
      ++t.events;
      runs.insert(e.at("args").at("run").get<std::uint64_t>());
      lanes.insert(e.at("tid").get<int>());
    }
    t.runs = static_cast<std::int64_t>(runs.size());
    t.lanes = static_cast<std::int64_t>(lanes.size());
  } catch (const nlohmann::json::exception& e) {
    throw Error("stag: trace " + path + ": not a trace-event file stag wrote (" + e.what() + ")");
  }
  return t;
}

void TraceRecorder::write(const std::string& path) const {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << json();
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw Error("stag::Session: trace " + path + ": cannot write " + tmp);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error("stag::Session: trace " + path + ": cannot replace it: " + why);
  }
}

}  // namespace stag

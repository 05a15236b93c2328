// SessionOptions::trace: the Chrome trace-event file parses and describes every node of every
// traced step, and under Schedule::parallel it shows two independent nodes running at the same
// time on two workers (the TBB schedule overlaps nodes, not only gives the same bits).
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/runtime/trace.hpp>

#include "harness.hpp"

namespace {
using namespace stag;

// Two independent branches of the same size: x w1 and x w2 (each about 0.5 GFLOP, a few
// milliseconds on one thread), joined only by the final sum.
constexpr auto branches = model([](Builder& g) {
  auto x = input<"x", Shape<1024, 256>>(g);
  auto a = matmul(x, param<Shape<256, 1024>>(g / "a", "weight"));
  auto b = matmul(x, param<Shape<256, 1024>>(g / "b", "weight"));
  return sum<0, 1>(a) + sum<0, 1>(b);
});

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() /
          (std::string(name) + "." + std::to_string(::getpid()) + ".json"))
      .string();
}

}  // namespace

TEST_CASE("a trace holds every node of every traced step with its op, shape, bytes and kernel",
          "[trace]") {
  const std::string path = temp_path("stag_trace");
  {
    Session s(branches, {.threads = 1, .trace = path, .trace_steps = 2, .seed = 1});
    s.set_input("x", th::random_array(DType::f32, {1024, 256}, 3));
    for (int step = 1; step <= 3; ++step) s.run({.step = static_cast<std::uint64_t>(step)});
    const nlohmann::json j = read_json(path);
    REQUIRE(j.contains("traceEvents"));
    std::map<std::uint64_t, int> per_step;
    double last_end = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] == "M") continue;
      REQUIRE(e["ph"] == "X");
      CHECK(!e["name"].get<std::string>().empty());
      const auto& a = e["args"];
      ++per_step[a["step"].get<std::uint64_t>()];
      CHECK(a["run"].get<int>() == a["step"].get<int>() - 1);  // the runs traced before it
      CHECK(a["op"] == e["cat"]);
      CHECK(a["shape"].get<std::string>().find(" f32") != std::string::npos);
      CHECK(a["bytes"].get<double>() > 0);
      CHECK(!a["kernel"].get<std::string>().empty());
      CHECK(e["dur"].get<double>() >= 0);
      if (a["op"] == "matmul") {
        CHECK(a["shape"] == "[1024, 1024] f32");
        CHECK(a["bytes"].get<double>() == 1024.0 * 1024 * 4);
        CHECK(a["gflop"].get<double>() == Approx(2.0 * 1024 * 1024 * 256 * 1e-9));
        CHECK(a["gflop_per_s"].get<double>() > 0);
        CHECK(a["kernel"].get<std::string>().find("onednn") != std::string::npos);
      }
      // One thread, sequential: the nodes follow one another.
      CHECK(e["ts"].get<double>() >= last_end - 1e-3);
      last_end = e["ts"].get<double>() + e["dur"].get<double>();
    }
    // Every node that ran, in each of the trace_steps = 2 steps; the third is not in the file.
    const int ran = static_cast<int>(s.plan().order.size());
    CHECK(per_step == std::map<std::uint64_t, int>{{1, ran}, {2, ran}});
    // What stag-train and stag-bench print, read back the same way.
    const TraceSummary t = read_trace_summary(path);
    CHECK(t.events == 2 * ran);
    CHECK(t.runs == 2);
    CHECK(t.lanes == 1);
  }
  std::filesystem::remove(path);
}

TEST_CASE("a trace in a folder that does not exist is an error naming it", "[trace]") {
  Session s(branches, {.threads = 1, .trace = "/nonexistent-folder/t.json", .seed = 1});
  s.set_input("x", th::random_array(DType::f32, {1024, 256}, 3));
  CHECK_THROWS_WITH(s.run(), Catch::Contains("trace /nonexistent-folder/t.json: cannot write"));
}

TEST_CASE("reading back a file that is not a trace is an error naming it", "[trace]") {
  const std::string path = temp_path("stag_not_a_trace");
  std::ofstream(path) << "{\"events\": []}";
  CHECK_THROWS_WITH(read_trace_summary(path),
                    Catch::Contains("trace " + path + ": not a trace-event file"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(read_trace_summary(path), Catch::Contains("trace " + path + ": cannot open"));
}

TEST_CASE("the parallel schedule runs two independent nodes at the same time", "[trace]") {
  const std::string path = temp_path("stag_trace_parallel");
  Session s(
      branches,
      {.threads = 2, .schedule = Schedule::parallel, .trace = path, .trace_steps = 50, .seed = 1});
  s.set_input("x", th::random_array(DType::f32, {1024, 256}, 3));
  // NOTE: an overlap needs both workers awake at once; on a loaded machine a step may run its
  // matmuls one after the other, so up to 50 steps are looked at.
  bool overlapped = false;
  int step = 0;
  std::string seen;
  while (!overlapped && step < 50) {
    s.run({.step = static_cast<std::uint64_t>(++step)});
    const Plan& p = s.plan();
    std::vector<int> matmuls;
    for (int n : p.order)
      if (p.graph.node(n).op == op::matmul) matmuls.push_back(n);
    REQUIRE(matmuls.size() == 2);
    const NodeSpan &a = p.spans[static_cast<std::size_t>(matmuls[0])],
                   &b = p.spans[static_cast<std::size_t>(matmuls[1])];
    REQUIRE(a.end_ns > a.start_ns);
    REQUIRE(b.end_ns > b.start_ns);
    overlapped = a.lane != b.lane && a.start_ns < b.end_ns && b.start_ns < a.end_ns;
    seen = "step " + std::to_string(step) + ": lanes " + std::to_string(a.lane) + ", " +
           std::to_string(b.lane) + "; [" + std::to_string(a.start_ns) + ", " +
           std::to_string(a.end_ns) + "] and [" + std::to_string(b.start_ns) + ", " +
           std::to_string(b.end_ns) + "] ns";
  }
  INFO(seen);
  CHECK(overlapped);
  // The file shows it too: two lanes named, and events on both.
  const nlohmann::json j = read_json(path);
  std::set<int> lanes;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") lanes.insert(e["tid"].get<int>());
  CHECK(lanes.size() == 2);
  std::filesystem::remove(path);
}

TEST_CASE("sessions tracing to one path write one timeline and count their runs together",
          "[trace]") {
  // The Trainer's way: its step, micro-batch and update sessions share the path. Each session
  // alone would rewrite the file with its own events only, and trace trace_steps runs each.
  constexpr auto single = model([](Builder& g) {
    auto x = input<"x", Shape<1024, 256>>(g);
    return sum<0, 1>(matmul(x, param<Shape<256, 64>>(g / "c", "weight")));
  });
  const std::string path = temp_path("stag_trace_shared");
  {
    const SessionOptions so{.threads = 1, .trace = path, .trace_steps = 3, .seed = 1};
    Session a(branches, so), b(single, so);
    const Array x = th::random_array(DType::f32, {1024, 256}, 3);
    a.set_input("x", x);
    b.set_input("x", x);
    for (int step = 1; step <= 4; ++step)
      (step % 2 ? a : b).run({.step = static_cast<std::uint64_t>(step)});
    const nlohmann::json j = read_json(path);
    std::map<std::uint64_t, std::set<std::string>> names;     // per step
    std::map<std::uint64_t, std::pair<double, double>> span;  // first start, last end per step
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "X") continue;
      const auto step = e["args"]["step"].get<std::uint64_t>();
      names[step].insert(e["name"].get<std::string>());
      const double t0 = e["ts"].get<double>(), t1 = t0 + e["dur"].get<double>();
      auto [it, fresh] = span.try_emplace(step, t0, t1);
      if (!fresh) it->second = {std::min(it->second.first, t0), std::max(it->second.second, t1)};
    }
    // Runs 1 and 3 of `branches`, run 2 of `single`; run 4 is past trace_steps = 3.
    REQUIRE(names.size() == 3);
    CHECK(names[1] == names[3]);
    CHECK(names[1] != names[2]);
    CHECK(names.count(4) == 0);
    // One clock: the runs follow one another on the timeline.
    CHECK(span[1].second <= span[2].first + 1e-3);
    CHECK(span[2].second <= span[3].first + 1e-3);
  }
  std::filesystem::remove(path);
}

// Metrics: the JSON-lines format byte for byte, append/resume behaviour, torn last lines, and
// the progress reporter's text (plain and terminal) under a fake clock, with hand-computed
// smoothed losses, rates and ETAs.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "harness.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

std::string file_text(const std::string& path) {
  const std::vector<std::uint8_t> b = th::read_bytes(path);
  return std::string(b.begin(), b.end());
}

TEST_CASE("a metrics record is one JSON object with shortest round-trip numbers", "[metrics]") {
  MetricsRecord r{.step = 12, .epoch = 1, .split = "train"};
  r.set("loss", 2.5).set("lr", 0.001).set("tokens_per_s", 12345.5).set("accuracy", std::nan(""));
  r.set("loss", 2.25);  // replaces, keeps the position
  CHECK(
      metrics_json(r) ==
      R"({"step":12,"epoch":1,"split":"train","loss":2.25,"lr":0.001,"tokens_per_s":12345.5,"accuracy":null})");
  MetricsRecord v{.step = 3, .epoch = 0, .split = "valid"};
  v.set("x", 0.1 + 0.2).set("inf", INFINITY);
  CHECK(metrics_json(v) ==
        R"({"step":3,"epoch":0,"split":"valid","x":0.30000000000000004,"inf":null})");
  const MetricsRecord back = parse_metrics_json(metrics_json(v));
  CHECK(back.step == 3);
  CHECK(back.split == "valid");
  CHECK(*back.get("x") == 0.1 + 0.2);  // exact
  CHECK(std::isnan(*back.get("inf")));
  CHECK(th::error_of([&] { r.set("step", 1); }) ==
        "stag::MetricsRecord: 'step' cannot name a value");
}

TEST_CASE("the log appends flushed lines, and a resumed run continues the file", "[metrics]") {
  th::TempDir tmp("metrics_log");
  const std::string path = tmp / "metrics.jsonl";
  {
    MetricsLog log(path);
    log.write(MetricsRecord{.step = 1}.set("loss", 4.0));
    // Flushed per line: readable before the log is closed.
    CHECK(file_text(path) == "{\"step\":1,\"epoch\":0,\"split\":\"train\",\"loss\":4.0}\n");
    log.write(MetricsRecord{.step = 2}.set("loss", 3.5));
  }
  {
    MetricsLog log(path);  // append mode
    log.write(MetricsRecord{.step = 3}.set("loss", 3.0));
  }
  std::vector<MetricsRecord> rs = read_metrics(path);
  REQUIRE(rs.size() == 3);
  CHECK(rs[2].step == 3);
  CHECK(*rs[1].get("loss") == 3.5);
  {
    MetricsLog log(path, false);  // a fresh run empties the file
    log.write(MetricsRecord{.step = 1});
  }
  CHECK(read_metrics(path).size() == 1);
}

TEST_CASE("resuming drops abandoned steps and a line a crash cut short", "[metrics]") {
  th::TempDir tmp("metrics_resume");
  const std::string path = tmp / "metrics.jsonl";
  {
    MetricsLog log(path);
    for (int s = 1; s <= 5; ++s) log.write(MetricsRecord{.step = s}.set("loss", 1.0 / s));
    log.write(MetricsRecord{.step = 4, .split = "valid"}.set("loss", 0.5));
  }
  truncate_metrics(tmp / "none.jsonl", 3);  // no file yet: nothing to do
  CHECK(!std::filesystem::exists(tmp / "none.jsonl"));
  truncate_metrics(path, 3);  // resumed from the checkpoint of step 3
  std::vector<MetricsRecord> rs = read_metrics(path);
  REQUIRE(rs.size() == 3);
  CHECK(rs.back().step == 3);
  // A torn last line (no newline) is skipped by readers and removed when the log reopens.
  {
    std::FILE* f = std::fopen(path.c_str(), "ab");
    std::fputs("{\"step\":4,\"epo", f);
    std::fclose(f);
  }
  CHECK(read_metrics(path).size() == 3);
  {
    MetricsLog log(path);
    log.write(MetricsRecord{.step = 4});
  }
  rs = read_metrics(path);
  REQUIRE(rs.size() == 4);
  CHECK(rs.back().step == 4);
  CHECK(file_text(path).find("\"epo\n") == std::string::npos);
  // A bad line in the middle is an error that names it.
  th::write_bytes(path, {'{', '}', '\n', 'x', '\n', '{', '}', '\n'});
  CHECK(
      th::error_of([&] {
        read_metrics(path);
      }).find("stag: metrics file " + path + ": line 2: stag: not a metrics line (invalid JSON)") ==
      0);
}

TEST_CASE("two writers of one metrics file append whole lines; resume drops unparsable ones",
          "[metrics][reliability]") {
  th::TempDir tmp("metrics_two_writers");
  const std::string path = tmp / "metrics.jsonl";
  {
    MetricsLog a(path, false);
    for (int s = 1; s <= 5; ++s) a.write(MetricsRecord{.step = s}.set("loss", 1.0 / s));
    MetricsLog b(path, false);  // a second fresh run in the same folder empties the file
    for (int s = 6; s <= 10; ++s) {
      a.write(MetricsRecord{.step = s}.set("loss", 1.0 / s));
      b.write(MetricsRecord{.step = s, .split = "b"}.set("loss", 2.0 / s));
    }
  }
  // Before O_APPEND, `a` went on writing at its old offset: a run of zero bytes, then its lines
  // over b's, so lines became unparsable.
  const std::vector<MetricsRecord> rs = read_metrics(path);
  REQUIRE(rs.size() == 10);
  int from_b = 0;
  for (const MetricsRecord& r : rs) from_b += r.split == "b";
  CHECK(from_b == 5);
  // A line garbled by some other writer does not keep a run from resuming.
  th::write_bytes(path, {});
  {
    MetricsLog log(path);
    log.write(MetricsRecord{.step = 1});
  }
  {
    std::FILE* f = std::fopen(path.c_str(), "ab");
    std::fputs("{\"step\":2,\"ep{\"step\":2}\n", f);
    std::fclose(f);
  }
  {
    MetricsLog log(path);
    log.write(MetricsRecord{.step = 3});
  }
  CHECK(!th::error_of([&] { read_metrics(path); }).empty());
  truncate_metrics(path, 5);
  const std::vector<MetricsRecord> kept = read_metrics(path);
  REQUIRE(kept.size() == 2);
  CHECK(kept[0].step == 1);
  CHECK(kept[1].step == 3);
}

TEST_CASE("durations and counts print in fixed formats", "[metrics]") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(59.4) == "59s");
  CHECK(format_duration(59.6) == "1m00s");
  CHECK(format_duration(125) == "2m05s");
  CHECK(format_duration(3600) == "1h00m");
  CHECK(format_duration(7380) == "2h03m");
  CHECK(format_duration(-1) == "?");
  CHECK(format_count(950) == "950");
  CHECK(format_count(12345) == "12.3k");
  CHECK(format_count(999949) == "999.9k");
  CHECK(format_count(999950) == "1.00M");
  CHECK(format_count(4.56e6) == "4.56M");
  CHECK(format_count(2.5e9) == "2.50G");
}

// Captures what a Progress prints.
struct Capture {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ~Capture() {
    std::fclose(f);
    std::free(buf);
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, len);
  }
};

TEST_CASE("plain progress: a line at the first step, every N steps and the last", "[metrics]") {
  Capture out;
  double t = 0;
  Progress p({.mode = ProgressOptions::Mode::plain,
              .out = out.f,
              .total_steps = 10,
              .every_steps = 5,
              .every_seconds = 1000,
              .loss_smoothing = 0.5,
              .clock = [&] { return t; }});
  CHECK(!p.terminal());
  for (int k = 1; k <= 10; ++k) {
    t = 0.5 * k;  // two steps per second, 1000 tokens each: 2000 tokens/s
    p.update(k, k > 5 ? 1 : 0, /*loss=*/k, /*lr=*/3e-4, /*tokens=*/1000);
  }
  p.finish();
  // Smoothed loss with factor 0.5 and bias correction, losses 1, 2, ..., k:
  //   k = 5: 4.03125 / (1 - 0.5^5) = 4.16129;  k = 10: 9.0009765625 / (1 - 0.5^10) = 9.00978.
  // ETA at step 5: 5 steps left at 2 steps/s = 2.5 s, printed rounded: "3s".
  CHECK(out.text() ==
        "step 1/10  epoch 0  loss 1.0000  lr 3.00e-04  0 tok/s  ETA ?\n"
        "step 5/10  epoch 0  loss 4.1613  lr 3.00e-04  2.0k tok/s  ETA 3s\n"
        "step 10/10  epoch 1  loss 9.0098  lr 3.00e-04  2.0k tok/s  ETA 0s\n");
}

TEST_CASE("plain progress by time; non-finite losses are counted, not averaged", "[metrics]") {
  Capture out;
  double t = 0;
  Progress p({.mode = ProgressOptions::Mode::plain,
              .out = out.f,
              .every_steps = 0,
              .every_seconds = 2,
              .loss_smoothing = 0,
              .clock = [&] { return t; }});
  for (int k = 1; k <= 9; ++k) {
    t = 0.5 * k;
    p.update(k, 0, k == 6 ? std::nan("") : 0.25, 1e-3);
  }
  p.finish();  // step 9 was printed (t = 4.5 is 2 s after step 5): nothing more
  // Lines at t = 0.5 (first), 2.5 (step 5) and 4.5 (step 9); no total: no ETA; no tokens.
  CHECK(out.text() ==
        "step 1  epoch 0  loss 0.2500  lr 1.00e-03\n"
        "step 5  epoch 0  loss 0.2500  lr 1.00e-03\n"
        "step 9  epoch 0  loss 0.2500  lr 1.00e-03  non-finite losses 1\n");
}

TEST_CASE("terminal progress redraws one line at most every redraw interval", "[metrics]") {
  Capture out;
  double t = 0;
  Progress p({.mode = ProgressOptions::Mode::terminal,
              .out = out.f,
              .total_steps = 4,
              .redraw_seconds = 1,
              .loss_smoothing = 0,
              .clock = [&] { return t; }});
  CHECK(p.terminal());
  for (int k = 1; k <= 4; ++k) {
    t = 0.6 * k;
    p.update(k, 0, 2.0, 1e-3);
    if (k == 2) p.note("valid loss 1.5");
  }
  p.finish();
  // Draws: step 1 (first), step 3 (1.2 s after step 1), step 4 (the last); step 2 is skipped but
  // the note redraws the status under itself. ETA at step 3: 1 step left at 1/0.6 steps/s.
  const std::string s1 = "step 1/4  epoch 0  loss 2.0000  lr 1.00e-03  ETA ?";
  const std::string s2 = "step 2/4  epoch 0  loss 2.0000  lr 1.00e-03  ETA 1s";
  const std::string s3 = "step 3/4  epoch 0  loss 2.0000  lr 1.00e-03  ETA 1s";
  const std::string s4 = "step 4/4  epoch 0  loss 2.0000  lr 1.00e-03  ETA 0s";
  CHECK(out.text() == "\r" + s1 + "\x1b[K" + "\r\x1b[Kvalid loss 1.5\n" + "\r" + s2 + "\x1b[K" +
                          "\r" + s3 + "\x1b[K" + "\r" + s4 + "\x1b[K" + "\n");
}

}  // namespace

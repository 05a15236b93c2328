// Training curves (runtime/viz/curves.hpp) from synthetic metrics: the SVG parses, has the panels
// and series the records call for, and its points map back (through the panel's plot area and
// axis domains) to the values given, computed here by the same formulas that made them.
#include <cmath>

#include "harness.hpp"
#include "svg_parse.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

struct Xy {
  double x, y;
};
std::vector<Xy> points_of(const th::XmlNode& polyline) {
  std::vector<Xy> out;
  const std::string text = polyline.attr("points");
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t used = 0;
    const double x = std::stod(text.substr(at), &used);
    at += used + 1;  // the comma
    const double y = std::stod(text.substr(at), &used);
    at += used + 1;  // the space
    out.push_back({x, y});
  }
  return out;
}

// Maps pixels back to (step, value) with the panel's plot area and domains (linear axes).
struct Inverse {
  double px, py, pw, ph, x0, x1, y0, y1;
  explicit Inverse(const th::XmlNode& panel) {
    const th::XmlNode* area = panel.with_class("plot-area").at(0);
    px = std::stod(area->attr("x"));
    py = std::stod(area->attr("y"));
    pw = std::stod(area->attr("width"));
    ph = std::stod(area->attr("height"));
    std::sscanf(panel.attr("data-x-domain").c_str(), "%lf %lf", &x0, &x1);
    std::sscanf(panel.attr("data-y-domain").c_str(), "%lf %lf", &y0, &y1);
  }
  double step(double x) const { return x0 + (x - px) / pw * (x1 - x0); }
  double value(double y) const { return y0 + (py + ph - y) / ph * (y1 - y0); }
};

std::vector<const th::XmlNode*> series(const th::XmlNode& panel, const std::string& split,
                                       const std::string& role) {
  return panel.find_all([&](const th::XmlNode& n) {
    return n.name == "polyline" && n.attr("data-split") == split && n.attr("data-role") == role;
  });
}

std::vector<MetricsRecord> synthetic_run() {
  std::vector<MetricsRecord> rs;
  for (int s = 1; s <= 20; ++s) {
    rs.push_back(MetricsRecord{.step = s}
                     .set("loss", 3.0 - 0.1 * s)
                     .set("lr", 1e-3 * s / 20)
                     .set("tokens_per_s", 1000.0 + 10 * s));
    if (s % 5 == 0)
      rs.push_back(MetricsRecord{.step = s, .split = "valid"}
                       .set("loss", 3.2 - 0.1 * s)
                       .set("accuracy", 0.5 + s / 100.0));
  }
  return rs;
}

TEST_CASE("training curves: panels for loss, lr and throughput, points at the logged values",
          "[curves]") {
  const std::string svg = training_curves_svg(synthetic_run());
  const th::XmlDoc doc = th::parse_xml(svg);
  INFO(doc.error);
  REQUIRE(doc.ok);
  const auto panels = doc.root.with_class("panel");
  REQUIRE(panels.size() == 3);
  CHECK(panels[0]->attr("data-metric") == "loss");
  CHECK(panels[1]->attr("data-metric") == "lr");
  CHECK(panels[2]->attr("data-metric") == "tokens_per_s");
  CHECK(svg.find("throughput (tokens/s)") != std::string::npos);

  // 20 train losses (no smoothing under 50 points) and 4 validation losses with markers.
  const auto train = series(*panels[0], "train", "line");
  REQUIRE(train.size() == 1);
  const Inverse loss(*panels[0]);
  const std::vector<Xy> tp = points_of(*train[0]);
  REQUIRE(tp.size() == 20);
  for (int i = 0; i < 20; ++i) {
    INFO("train point " << i);
    CHECK(loss.step(tp[static_cast<std::size_t>(i)].x) == Approx(i + 1).margin(0.05));
    CHECK(loss.value(tp[static_cast<std::size_t>(i)].y) ==
          Approx(3.0 - 0.1 * (i + 1)).margin(0.002));
  }
  const auto valid = series(*panels[0], "valid", "line");
  REQUIRE(valid.size() == 1);
  const std::vector<Xy> vp = points_of(*valid[0]);
  REQUIRE(vp.size() == 4);
  CHECK(loss.step(vp[3].x) == Approx(20).margin(0.05));
  CHECK(loss.value(vp[3].y) == Approx(1.2).margin(0.002));
  CHECK(panels[0]->with_class("point").size() == 4);
  // Every point lies inside the plot area.
  for (const Xy& p : tp) {
    CHECK(p.x >= loss.px - 0.01);
    CHECK(p.x <= loss.px + loss.pw + 0.01);
    CHECK(p.y >= loss.py - 0.01);
    CHECK(p.y <= loss.py + loss.ph + 0.01);
  }
  // The learning rate's last point is 1e-3.
  const Inverse lr(*panels[1]);
  const std::vector<Xy> lp = points_of(*series(*panels[1], "train", "line").at(0));
  REQUIRE(lp.size() == 20);
  CHECK(lr.value(lp.back().y) == Approx(1e-3).margin(1e-6));
  // The caption summarises the run.
  CHECK(doc.root.with_class("caption").at(0)->text == "training curves");
  CHECK(doc.root.with_class("summary").at(0)->text ==
        "steps 1\u201320, last train loss 1, best valid loss 1.2 at step 20");
}

TEST_CASE("training curves: repeated steps keep the later line, order by step, extra panels",
          "[curves]") {
  std::vector<MetricsRecord> rs;
  rs.push_back(MetricsRecord{.step = 3}.set("loss", 1.0));
  rs.push_back(MetricsRecord{.step = 1}.set("loss", 3.0));
  rs.push_back(MetricsRecord{.step = 2}.set("loss", 9.0));  // abandoned by a resumed run...
  rs.push_back(MetricsRecord{.step = 2}.set("loss", 2.0));  // ...which logged step 2 again
  rs.push_back(MetricsRecord{.step = 3, .split = "valid"}.set("accuracy", 0.75));
  const th::XmlDoc doc = th::parse_xml(training_curves_svg(rs, {.extra = {"accuracy"}}));
  REQUIRE(doc.ok);
  const auto panels = doc.root.with_class("panel");
  REQUIRE(panels.size() == 2);
  CHECK(panels[1]->attr("data-metric") == "accuracy");
  const Inverse inv(*panels[0]);
  const std::vector<Xy> p = points_of(*series(*panels[0], "train", "line").at(0));
  REQUIRE(p.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(inv.step(p[static_cast<std::size_t>(i)].x) == Approx(i + 1).margin(0.01));
    CHECK(inv.value(p[static_cast<std::size_t>(i)].y) == Approx(3.0 - i).margin(0.001));
  }
  CHECK(th::error_of([&] { (void)training_curves_svg(rs, {.extra = {"bleu"}}); }) ==
        "stag: training curves: no 'bleu' values in the metrics (they have: loss, accuracy)");
  CHECK(th::error_of([&] { (void)training_curves_svg({}); }) ==
        "stag: training curves: no records to draw");
  CHECK(th::error_of([&] {
          (void)training_curves_svg({MetricsRecord{.step = 1}.set("grad_norm", 1)});
        }).find("nothing to draw") != std::string::npos);
}

TEST_CASE("training curves: a non-finite loss breaks the line and is marked", "[curves]") {
  std::vector<MetricsRecord> rs;
  for (int s = 1; s <= 10; ++s)
    rs.push_back(MetricsRecord{.step = s}.set("loss", s == 6 ? NAN : 1.0 / s));
  const th::XmlDoc doc = th::parse_xml(training_curves_svg(rs));
  REQUIRE(doc.ok);
  const auto panel = doc.root.with_class("panel").at(0);
  const auto lines = series(*panel, "train", "line");
  REQUIRE(lines.size() == 2);
  CHECK(points_of(*lines[0]).size() == 5);
  CHECK(points_of(*lines[1]).size() == 4);
  const auto marks = panel->with_class("nonfinite");
  REQUIRE(marks.size() == 1);
  CHECK(marks[0]->child("title")->text == "step 6: not finite");
}

TEST_CASE("training curves: the train loss is smoothed with a bias-corrected EMA", "[curves]") {
  std::vector<MetricsRecord> rs;
  auto loss_at = [](int s) { return 2.0 + std::sin(s * 0.7); };
  for (int s = 1; s <= 60; ++s) rs.push_back(MetricsRecord{.step = s}.set("loss", loss_at(s)));
  const th::XmlDoc doc = th::parse_xml(training_curves_svg(rs));  // 60 > 50 points: beta 0.9
  REQUIRE(doc.ok);
  const auto panel = doc.root.with_class("panel").at(0);
  REQUIRE(series(*panel, "train", "raw").size() == 1);
  const auto sm = series(*panel, "train", "smoothed");
  REQUIRE(sm.size() == 1);
  const Inverse inv(*panel);
  const std::vector<Xy> p = points_of(*sm[0]);
  REQUIRE(p.size() == 60);
  // EMA with beta 0.9, divided by 1 - 0.9^n: the first value is the first loss itself.
  CHECK(inv.value(p[0].y) == Approx(loss_at(1)).margin(0.002));
  const double second = (0.9 * 0.1 * loss_at(1) + 0.1 * loss_at(2)) / (1 - 0.81);
  CHECK(inv.value(p[1].y) == Approx(second).margin(0.002));
  // On a log axis the EMA is of log(loss): a geometric mean.
  const th::XmlDoc lg = th::parse_xml(training_curves_svg(rs, {.log_loss = true}));
  REQUIRE(lg.ok);
  const auto lpanel = lg.root.with_class("panel").at(0);
  const std::vector<Xy> lp = points_of(*series(*lpanel, "train", "smoothed").at(0));
  REQUIRE(lp.size() == 60);
  double y0 = 0, y1 = 0;
  std::sscanf(lpanel->attr("data-y-domain").c_str(), "%lf %lf", &y0, &y1);
  const Inverse la(*lpanel);  // linear in log10(value)
  auto log_value = [&](double y) {
    return std::pow(
        10.0, std::log10(y0) + (la.py + la.ph - y) / la.ph * (std::log10(y1) - std::log10(y0)));
  };
  const double geometric =
      std::exp((0.9 * 0.1 * std::log(loss_at(1)) + 0.1 * std::log(loss_at(2))) / (1 - 0.81));
  CHECK(log_value(lp[1].y) == Approx(geometric).epsilon(0.001));
  // No smoothing when asked.
  const th::XmlDoc raw = th::parse_xml(training_curves_svg(rs, {.smoothing = 0}));
  CHECK(series(*raw.root.with_class("panel").at(0), "train", "smoothed").empty());
}

TEST_CASE("training curves: long runs are thinned per pixel column and keep their spikes",
          "[curves]") {
  std::vector<MetricsRecord> rs;
  for (int s = 1; s <= 20000; ++s)
    rs.push_back(MetricsRecord{.step = s}.set("loss", s == 12345 ? 100.0 : 1.0));
  const std::string svg = training_curves_svg(rs, {.smoothing = 0});
  const th::XmlDoc doc = th::parse_xml(svg);
  REQUIRE(doc.ok);
  const auto panel = doc.root.with_class("panel").at(0);
  const Inverse inv(*panel);
  const std::vector<Xy> p = points_of(*series(*panel, "train", "line").at(0));
  CHECK(p.size() <= static_cast<std::size_t>(4 * (inv.pw + 1)));
  double highest = 0;
  for (const Xy& q : p) highest = std::max(highest, inv.value(q.y));
  CHECK(highest == Approx(100).margin(0.1));
  CHECK(svg.size() < 200000);
}

TEST_CASE("training curves: a log-scale loss axis and plot_metrics from a file", "[curves]") {
  const th::TempDir dir("curves");
  {
    MetricsLog log(dir / "metrics.jsonl", false);
    for (const MetricsRecord& r : synthetic_run()) log.write(r);
  }
  plot_metrics(dir / "metrics.jsonl", dir / "curves.svg", {.log_loss = true});
  const std::vector<std::uint8_t> bytes = th::read_bytes(dir / "curves.svg");
  const th::XmlDoc doc = th::parse_xml(std::string(bytes.begin(), bytes.end()));
  REQUIRE(doc.ok);
  const auto panel = doc.root.with_class("panel").at(0);
  CHECK(panel->attr("data-y-scale") == "log");
  // On a log axis equal ratios are equal distances: loss 2.9 -> 1.45 ... pick 2.0 (step 10) and 1.0
  // (step 20).
  const std::vector<Xy> p = points_of(*series(*panel, "train", "line").at(0));
  REQUIRE(p.size() == 20);
  const double y_top = p[0].y, y_2 = p[9].y, y_1 = p[19].y;  // 2.9, 2.0, 1.0
  CHECK((y_1 - y_2) / (y_2 - y_top) ==
        Approx(std::log(2.0 / 1.0) / std::log(2.9 / 2.0)).epsilon(0.01));
  CHECK(doc.root.with_class("caption").at(0)->text.find("metrics.jsonl") != std::string::npos);
  CHECK_THROWS_AS(plot_metrics(dir / "missing.jsonl", dir / "x.svg"), Error);
}

}  // namespace

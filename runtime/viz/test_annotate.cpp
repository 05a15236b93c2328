// Runtime annotations for graph pictures (runtime/viz/annotate.hpp), generated inputs
// (runtime/sample_inputs.hpp) and draw_model_svg: each annotation line is checked against the
// session's plan and profile, and the generated inputs against the model's tables.
#include <algorithm>
#include <cstdio>

#include "harness.hpp"
#include "svg_parse.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

constexpr ClassifierConfig kCls{.vocab = 37,
                                .max_len = 16,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 2,
                                .classes = 3,
                                .dropout = 0.0};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_train = grad<cls>();

TEST_CASE("sample inputs: ids within the table, labels within the classes, padded masks",
          "[annotate]") {
  const NamedArrays in = sample_inputs(cls, {{"batch", 6}, {"seq", 12}}, {.seed = 9});
  REQUIRE(in.size() == 3);
  const Array& ids = in.at("ids");
  const Array& keep = in.at("keep");
  const Array& label = in.at("label");
  CHECK(ids.dtype() == DType::i32);
  CHECK(ids.dims() == std::vector<std::int64_t>{6, 12});
  CHECK(keep.dtype() == DType::boolean);
  CHECK(label.dims() == std::vector<std::int64_t>{6});
  for (const double v : ids.to_doubles()) CHECK((v >= 0 && v < 37));
  for (const double v : label.to_doubles()) CHECK((v >= 0 && v < 3));
  // Ids are not all the same (the generator is not stuck).
  const std::vector<double> iv = ids.to_doubles();
  CHECK(std::count(iv.begin(), iv.end(), iv[0]) < 20);
  const std::vector<std::int64_t> kept = kept_lengths(keep);
  REQUIRE(kept.size() == 6);
  CHECK(kept[0] == 12);
  for (std::size_t r = 1; r < 6; ++r) {
    INFO("row " << r);
    CHECK(kept[r] >= 6);                   // at most half padded
    CHECK(kept[r] <= 11);                  // at least one padded
    for (std::int64_t p = 0; p < 12; ++p)  // padding at the end
      CHECK((keep.at(static_cast<std::int64_t>(r) * 12 + p) != 0) == (p < kept[r]));
  }
  // The same seed gives the same tensors; the model runs on them.
  CHECK(sample_inputs(cls, {{"batch", 6}, {"seq", 12}}, {.seed = 9}).at("ids").to_doubles() == iv);
  Session s(cls, {.seed = 1});
  s.set_inputs(in);
  s.run();
  CHECK(std::isfinite(s.result()));
}

TEST_CASE("sample inputs: errors name every missing symbol and unreadable inputs", "[annotate]") {
  CHECK(th::error_of([] { (void)sample_inputs(cls, {}); }) ==
        "stag: sample inputs need a value for symbols batch, seq (e.g. --dim batch=8 --dim seq=8)");
  CHECK(th::error_of([] {
          (void)sample_inputs(cls, {{"batch", 0}, {"seq", 4}});
        }) == "stag: sample inputs: symbol 'batch' must be positive, got 0");
  static constexpr auto ints = model([](Builder& g) {
    auto n = input<"n", Shape<4>, DType::i32>(g);
    auto x = input<"x", Shape<4>>(g);
    return mean<0>(x * cast<DType::f32>(n));
  });
  CHECK(th::error_of([] { (void)sample_inputs(ints, {}); }) ==
        "stag: sample inputs: cannot tell which values integer input 'n' may take (no embedding or "
        "loss reads "
        "it directly); pass it yourself");
}

std::size_t idx(int n) {
  return static_cast<std::size_t>(n);
}

TEST_CASE("plan and kernel annotations say what the plan holds", "[annotate]") {
  Session s(cls_train, {.threads = 1, .seed = 1});
  s.set_inputs(sample_inputs(cls_train, {{"batch", 2}, {"seq", 5}}));
  s.run();
  const Plan& plan = s.plan();
  const DotAnnotations pa = plan_annotations(s);
  const DotAnnotations ka = kernel_annotations(s);
  CHECK(pa.title.find("memory plan at batch=2, seq=5: arena ") == 0);
  int compute = 0, in_place = 0;
  const GraphView g = cls_train;
  for (int n = 0; n < g.size(); ++n) {
    const NodePlan& p = plan.nodes[idx(n)];
    INFO(g.name(n));
    if (p.kind == NodePlan::Kind::compute) {
      ++compute;
      REQUIRE(pa.lines.count(n) == 1);
      const std::vector<std::string>& l = pa.lines.at(n);
      REQUIRE(l.size() == 2);
      CHECK(l[0] == "buffer " + std::to_string(p.buffer) + " at +" +
                        bytes_text(static_cast<double>(plan.memory.offsets[idx(p.buffer)])));
      const double bytes = static_cast<double>(
          p.view.numel() * static_cast<std::int64_t>(dtype_size(g.node(n).dtype)));
      CHECK(l[1] == bytes_text(bytes) + (p.in_place ? ", in place" : ""));
      in_place += p.in_place;
      CHECK(ka.lines.at(n).at(0) == p.kernel_name + (p.in_place ? " (in place)" : ""));
      CHECK((ka.heat.count(n) == 1) == (p.kernel_name.rfind("reference", 0) == 0));
    } else if (p.kind == NodePlan::Kind::external) {
      CHECK(pa.lines.at(n).at(0) == "parameter (outside the arena)");
      CHECK(pa.heat.count(n) == 0);
    } else if (p.kind == NodePlan::Kind::alias) {
      CHECK(pa.lines.at(n).at(0).find("view of buffer ") == 0);
      CHECK(ka.lines.at(n).at(0) == "view (no copy)");
    }
  }
  CHECK(compute > 50);
  CHECK(in_place > 0);  // the planner does work in place in a training graph
  // Heat is bytes over the largest node's bytes: exactly 1 somewhere, never above.
  double hottest = 0;
  for (const auto& [n, h] : pa.heat) hottest = std::max(hottest, h);
  CHECK(hottest == 1.0);
}

TEST_CASE("time annotations: mean milliseconds per node, the slowest at heat 1", "[annotate]") {
  {
    Session unprofiled(cls, {.threads = 1, .seed = 1});
    unprofiled.set_inputs(sample_inputs(cls, {{"batch", 2}, {"seq", 5}}));
    unprofiled.run();
    CHECK(th::error_of([&] {
            (void)time_annotations(unprofiled);
          }).find("SessionOptions::profile") != std::string::npos);
  }
  Session s(cls, {.threads = 1, .profile = true, .seed = 1});
  s.set_inputs(sample_inputs(cls, {{"batch", 2}, {"seq", 5}}));
  for (int i = 0; i < 3; ++i) s.run();
  const Plan& plan = s.plan();
  const DotAnnotations ta = time_annotations(s);
  CHECK(ta.title.find("mean time per node over 3 profiled steps: ") == 0);
  int slowest = plan.order.front();
  for (const int n : plan.order)
    if (plan.node_seconds[idx(n)] > plan.node_seconds[idx(slowest)]) slowest = n;
  CHECK(ta.heat.at(slowest) == 1.0);
  for (const int n : plan.order) {
    double ms = 0, share = 0;
    REQUIRE(std::sscanf(ta.lines.at(n).at(0).c_str(), "%lf ms, %lf%%", &ms, &share) == 2);
    CHECK(ms == Approx(1e3 * plan.node_seconds[idx(n)] / 3).margin(0.0005));
    CHECK(ta.heat.at(n) == Approx(plan.node_seconds[idx(n)] / plan.node_seconds[idx(slowest)]));
  }
}

TEST_CASE("annotated training graphs draw, collapsed and not", "[annotate][render]") {
  Session s(cls_train, {.threads = 1, .profile = true, .seed = 1});
  s.set_inputs(sample_inputs(cls_train, {{"batch", 2}, {"seq", 5}}));
  s.run();
  for (const bool collapse : {false, true}) {
    DotOptions o = dot_options();
    o.collapse = collapse;
    o.annotations = time_annotations(s);
    const std::string svg = render(to_dot(cls_train, o), ImageFormat::svg);
    CHECK(svg.find(" ms, ") != std::string::npos);
    o.annotations = kernel_annotations(s);
    CHECK(render(to_dot(cls_train, o), ImageFormat::svg).find("onednn") != std::string::npos);
  }
}

TEST_CASE("draw_model_svg writes the model's picture in one call", "[annotate][render]") {
  const th::TempDir dir("draw_model");
  draw_model_svg(cls, dir / "model.svg");
  draw_model_svg(cls, dir / "full.svg", false, "the classifier");
  auto text_of = [&](const std::string& f) {
    const std::vector<std::uint8_t> b = th::read_bytes(dir / f);
    return std::string(b.begin(), b.end());
  };
  const th::XmlDoc collapsed = th::parse_xml(text_of("model.svg"));
  const th::XmlDoc full = th::parse_xml(text_of("full.svg"));
  REQUIRE(collapsed.ok);
  REQUIRE(full.ok);
  auto node_count = [](const th::XmlDoc& d) { return d.root.with_class("node").size(); };
  // Two identical layers: the collapsed picture draws one of them.
  CHECK(node_count(collapsed) ==
        static_cast<std::size_t>(fold_repeats(cls, dot_options().ops).drawn_nodes()));
  CHECK(node_count(full) == static_cast<std::size_t>(cls.size()));
  CHECK(node_count(collapsed) < node_count(full));
  // The drawn block is labelled with the run it stands for (Graphviz writes '-' as &#45;).
  CHECK_FALSE(collapsed.root
                  .find_all([](const th::XmlNode& n) {
                    return n.name == "text" && n.text.find("enc.[0-1]") == 0;
                  })
                  .empty());
  CHECK(text_of("full.svg").find("the classifier") != std::string::npos);
  CHECK_THROWS_AS(draw_model_svg(cls, "/nonexistent-dir/model.svg"), Error);
}

}  // namespace

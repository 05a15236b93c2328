// Attention heatmaps (runtime/viz/heatmap.hpp): the SVG parses as XML, has one panel per head and
// q*k cells per panel in row-major order, colours follow ColorBrewer's Blues (values written
// here from the published scale), and a real classifier run draws padded keys in the zero colour.
#include <cstdio>

#include <stag/runtime/viz/svg.hpp>

#include "harness.hpp"
#include "svg_parse.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;

// Blues, 9 classes: the lightest, the middle (5th) and the darkest colour.
constexpr const char* kZero = "#f7fbff";
constexpr const char* kMiddle = "#6baed6";
constexpr const char* kTop = "#08306b";

std::vector<const th::XmlNode*> cells_of(const th::XmlNode& panel) {
  const th::XmlNode* cells = panel.with_class("cells").at(0);
  return cells->children_named("rect");
}

TEST_CASE("a heatmap has a panel per head and a cell per weight, coloured by value", "[heatmap]") {
  // Two heads, 3 queries, 4 keys; key 3 is masked (weight 0) in both heads.
  const Array w = Array::from_vector<float>(
      {2, 3, 4},
      {0.5f, 0.25f, 0.25f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.2f, 0.3f, 0.5f, 0.0f,  // head 0
       0.1f, 0.4f,  0.5f,  0.0f, 0.5f, 0.5f, 0.0f, 0.0f, 0.6f, 0.2f, 0.2f, 0.0f});
  const std::vector<std::string> tokens = {"the", "cat", "<sat>", "pad"};
  const std::string svg = attention_heatmap_svg(w, {.keys = tokens, .title = "two heads"});
  const th::XmlDoc doc = th::parse_xml(svg);
  INFO(doc.error);
  REQUIRE(doc.ok);
  REQUIRE(doc.document()->name == "svg");
  const auto panels = doc.root.with_class("panel");
  REQUIRE(panels.size() == 2);
  for (std::size_t h = 0; h < 2; ++h) {
    CHECK(panels[h]->attr("data-head") == std::to_string(h));
    const auto cells = cells_of(*panels[h]);
    REQUIRE(cells.size() == 12);
    // Row-major: x grows with the key, y with the query; all cells the same size.
    CHECK(std::stod(cells[1]->attr("x")) > std::stod(cells[0]->attr("x")));
    CHECK(cells[1]->attr("y") == cells[0]->attr("y"));
    CHECK(std::stod(cells[4]->attr("y")) > std::stod(cells[0]->attr("y")));
    CHECK(cells[4]->attr("x") == cells[0]->attr("x"));
    for (int q = 0; q < 3; ++q)
      CHECK(cells[static_cast<std::size_t>(q * 4 + 3)]->attr("fill") == kZero);
  }
  // The scale runs from 0 to the largest weight (1.0): 1.0 is the darkest, 0.5 the middle colour.
  const auto h0 = cells_of(*panels[0]);
  CHECK(h0[4]->attr("fill") == kTop);     // head 0, query 1, key 0: 1.0
  CHECK(h0[0]->attr("fill") == kMiddle);  // head 0, query 0, key 0: 0.5
  CHECK(h0[5]->attr("fill") == kZero);    // an unmasked zero is drawn the same
  // Tooltips name both tokens and the weight; labels are escaped, not dropped.
  REQUIRE(h0[1]->child("title") != nullptr);
  CHECK(h0[1]->child("title")->text == "query 0 \u2192 key 1 \u201ccat\u201d: 0.25");
  const auto key_labels = panels[0]->with_class("key-labels").at(0)->children_named("text");
  REQUIRE(key_labels.size() == 4);
  CHECK(key_labels[2]->text == "<sat>");
  // Self-attention: the queries are labelled with the keys' tokens when the lengths agree... but
  // here q_len 3 != k_len 4, so the rows are numbered.
  const auto query_labels = panels[0]->with_class("query-labels").at(0)->children_named("text");
  REQUIRE(query_labels.size() == 3);
  CHECK(query_labels[2]->text == "2");
  CHECK(svg.find("two heads") != std::string::npos);
}

TEST_CASE("heatmap colour scale, caller's top, and non-finite weights", "[heatmap]") {
  CHECK(svg::weight_colour(0).hex() == kZero);
  CHECK(svg::weight_colour(0.5).hex() == kMiddle);
  CHECK(svg::weight_colour(1).hex() == kTop);
  CHECK(svg::weight_colour(2).hex() == kTop);
  // Halfway between the 1st (#f7fbff) and 2nd (#deebf7) class: t = 1/16.
  CHECK(svg::weight_colour(1.0 / 16).hex() == "#ebf3fb");

  const Array w = Array::from_vector<double>({2, 2}, {0.25, 0.75, NAN, 1.0});
  const std::string svg = attention_heatmap_svg(w, {.max = 0.5, .tooltips = false});
  const th::XmlDoc doc = th::parse_xml(svg);
  REQUIRE(doc.ok);
  const auto panels = doc.root.with_class("panel");
  REQUIRE(panels.size() == 1);  // [q, k]: one panel
  const auto cells = cells_of(*panels[0]);
  REQUIRE(cells.size() == 4);
  CHECK(cells[0]->attr("fill") == kMiddle);  // 0.25 of a 0.5 scale
  CHECK(cells[1]->attr("fill") == kTop);     // above the top: clamped
  CHECK(cells[2]->attr("fill") == svg::kNonFiniteColour.hex());
  CHECK(cells[0]->child("title") == nullptr);
  CHECK(doc.root.with_class("caption").at(0)->text.find("1 weights are NaN or infinite") !=
        std::string::npos);
}

TEST_CASE("heatmap input errors name what is wrong", "[heatmap]") {
  const Array w = Array::from_vector<float>({1, 2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK(th::error_of([&] {
          (void)attention_heatmap_svg(w, {.keys = {"a", "b"}});
        }) == "stag: attention heatmap: 2 key labels for 3 keys (the weights' last dim)");
  CHECK(th::error_of([&] {
          (void)attention_heatmap_svg(Array(DType::f32, {2}));
        }).find("[heads, q_len, k_len]") != std::string::npos);
  CHECK(th::error_of([&] {
          (void)attention_heatmap_svg(Array(DType::i32, {2, 2}));
        }).find("f32 or f64") != std::string::npos);
  CHECK(th::error_of([&] {
          (void)attention_heatmap_svg(Array(DType::f32, {0, 2, 2}));
        }).find("nothing to draw") != std::string::npos);
}

constexpr ClassifierConfig kCls{.vocab = 40,
                                .max_len = 16,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 1,
                                .classes = 2,
                                .dropout = 0.0};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });

TEST_CASE("a classifier's padded keys are drawn with the zero colour", "[heatmap]") {
  const std::string node = "enc.0.self_attn.weights";
  const NamedArrays in = sample_inputs(cls, {{"batch", 3}, {"seq", 10}}, {.seed = 5});
  Session s(cls, {.seed = 3, .keep = {node}});
  s.set_inputs(in);
  s.run();
  const Array keep = in.at("keep");
  const Array all = s.get(node);  // [3, 2, 10, 10]
  REQUIRE(all.dims() == std::vector<std::int64_t>{3, 2, 10, 10});
  for (std::int64_t row = 0; row < 3; ++row) {
    INFO("batch row " << row);
    const Array w = attention_weights(s, node, row);
    REQUIRE(w.dims() == std::vector<std::int64_t>{2, 10, 10});
    // attention_weights is row `row` of the node's value, element for element.
    for (std::int64_t i = 0; i < w.numel(); ++i) REQUIRE(w.at(i) == all.at(row * 200 + i));
    const th::XmlDoc doc = th::parse_xml(attention_heatmap_svg(w));
    REQUIRE(doc.ok);
    const auto panels = doc.root.with_class("panel");
    REQUIRE(panels.size() == 2);
    int padded = 0;
    for (const auto* panel : panels) {
      const auto cells = cells_of(*panel);
      REQUIRE(cells.size() == 100);
      for (std::int64_t q = 0; q < 10; ++q)
        for (std::int64_t k = 0; k < 10; ++k) {
          const bool kept = keep.at(row * 10 + k) != 0;
          const std::string fill = cells[static_cast<std::size_t>(q * 10 + k)]->attr("fill");
          if (!kept) {
            ++padded;
            CHECK(fill == kZero);
          } else {
            CHECK(fill != kZero);  // a real key's weight is about 1/kept, far from 0
          }
        }
    }
    // sample_inputs pads every row but the first.
    CHECK((row == 0 ? padded == 0 : padded > 0));
  }
  CHECK(th::error_of([&] { (void)attention_weights(s, node, 3); }) ==
        "stag: attention weights: batch row 3 of node 'enc.0.self_attn.weights', which has 3 rows");
  Session unkept(cls, {.seed = 3});
  unkept.set_inputs(in);
  unkept.run();
  CHECK(th::error_of([&] { (void)attention_weights(unkept, node); }).find("SessionOptions::keep") !=
        std::string::npos);
}

TEST_CASE("write_attention_heatmap writes the file with a default title", "[heatmap]") {
  const th::TempDir dir("heatmap");
  const std::string node = "enc.0.self_attn.weights";
  Session s(cls, {.seed = 3, .keep = {node}});
  s.set_inputs(sample_inputs(cls, {{"batch", 2}, {"seq", 6}}));
  s.run();
  write_attention_heatmap(s, node, dir / "att.svg", {}, 1);
  const std::vector<std::uint8_t> bytes = th::read_bytes(dir / "att.svg");
  const th::XmlDoc doc = th::parse_xml(std::string(bytes.begin(), bytes.end()));
  REQUIRE(doc.ok);
  CHECK(doc.root.with_class("caption").at(0)->text == "enc.0.self_attn.weights, batch row 1");
  CHECK_THROWS_AS(write_attention_heatmap(s, node, "/nonexistent-dir/att.svg"), Error);
}

}  // namespace

// Rendering through Graphviz's libraries (runtime/viz/render.hpp): real SVG, PNG and PDF files,
// Graphviz's errors as stag::Error, and every example model drawn forward and for training.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "dot_parse.hpp"
#include "examples/examples.hpp"
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto tiny = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 5>>(g);
  auto w = param<Shape<5, 3>>(g / "lin", "weight");
  return mean<0, 1>(matmul(x, w));
});

bool starts_with(const std::string& s, std::string_view p) {
  return s.rfind(p, 0) == 0;
}

struct PngSize {
  std::uint32_t width = 0, height = 0;
};
// Reads width and height from a PNG's IHDR chunk (the first chunk, right after the signature).
PngSize png_size(const std::string& png) {
  REQUIRE(png.size() > 24);
  REQUIRE(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  REQUIRE(png.compare(12, 4, "IHDR") == 0);
  auto be32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<unsigned char>(png[at + k]);
    return v;
  };
  return {be32(16), be32(20)};
}

TEST_CASE("a rendered PNG is a real image of sensible size", "[render]") {
  const PngSize small = png_size(render(to_dot(tiny, dot_options()), ImageFormat::png));
  INFO("tiny graph: " << small.width << " x " << small.height);
  // Four boxes and a cluster, drawn at 96 dpi: a few hundred pixels each way.
  CHECK(small.width >= 150);
  CHECK(small.width <= 1500);
  CHECK(small.height >= 200);
  CHECK(small.height <= 1500);
  const GraphView att = examples::find_example("attention")->training;
  const PngSize big = png_size(render(to_dot(att, dot_options()), ImageFormat::png));
  INFO("attention training graph: " << big.width << " x " << big.height);
  CHECK(big.width > 2 * small.width);
  CHECK(big.height > 2 * small.height);
}

TEST_CASE("SVG and PDF renders are what their format says", "[render]") {
  const std::string dot = to_dot(tiny, dot_options());
  const std::string svg = render(dot, ImageFormat::svg);
  CHECK(starts_with(svg, "<?xml"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("[batch, 5] f32") != std::string::npos);
  CHECK(starts_with(render(dot, ImageFormat::pdf), "%PDF-"));
  CHECK(render(dot, ImageFormat::dot) == dot);
}

TEST_CASE("Graphviz errors become stag::Error with Graphviz's message", "[render]") {
  try {
    (void)render("digraph { a -> ; }", ImageFormat::svg);
    FAIL("a syntax error must throw");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("syntax error") != std::string::npos);
  }
  CHECK_THROWS_AS(render("", ImageFormat::png), Error);
  // And rendering still works after a failure (no Graphviz state left behind).
  CHECK(starts_with(render("digraph { a -> b }", ImageFormat::svg), "<?xml"));
}

TEST_CASE("formats are named by extension or by name", "[render]") {
  CHECK(image_format_of("out/graph.svg") == ImageFormat::svg);
  CHECK(image_format_of("GRAPH.PNG") == ImageFormat::png);
  CHECK(image_format_of("a.b.pdf") == ImageFormat::pdf);
  CHECK(parse_image_format("dot") == ImageFormat::dot);
  CHECK_FALSE(parse_image_format("gif").has_value());
  try {
    (void)image_format_of("graph.gif");
    FAIL("an unknown extension must throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("graph.gif") != std::string::npos);
  }
}

TEST_CASE("draw writes a picture in one call", "[render]") {
  const auto path =
      std::filesystem::temp_directory_path() /
      ("stag_draw_test_" + std::to_string(static_cast<long long>(::getpid())) + ".svg");
  DotOptions o;  // no op names: draw fills in the registry's
  o.collapse = true;
  draw(tiny, path.string(), o);
  std::ifstream f(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::filesystem::remove(path);
  CHECK(starts_with(text, "<?xml"));
  CHECK(text.find("op#") == std::string::npos);
  CHECK(text.find("param") != std::string::npos);
  CHECK_THROWS_AS(draw(tiny, "/nonexistent-dir/x.svg"), Error);
}

TEST_CASE("every example model draws, forward and training, full and collapsed",
          "[render][examples]") {
  for (const examples::ExampleModel& m : examples::example_models()) {
    for (const auto& [view, g] :
         {std::pair{"forward", m.forward}, std::pair{"training", m.training}}) {
      for (const bool collapse : {false, true}) {
        INFO(m.name << " " << view << (collapse ? " collapsed" : ""));
        DotOptions o = dot_options();
        o.collapse = collapse;
        // NOTE: Graphviz's layout time explodes with size: the 6+6 Transformer's training graph
        // (2,096 nodes) takes 90 s in full, 21 s without the forward-to-backward links, and its
        // collapsed view (768 nodes) 26 s with the links, 1.4 s without. The links are left out
        // of big graphs here, and graphs of over 1,500 drawn nodes are checked as DOT only.
        const int drawn = collapse ? fold_repeats(g, o.ops).drawn_nodes() : g.size();
        o.gradient_links = drawn <= 600;
        const std::string dot = to_dot(g, o);
        const th::ParsedDot d = th::parse_dot(dot);
        REQUIRE(d.ok);
        CHECK(d.nodes == drawn);
        if (drawn > 1500) continue;
        const std::string svg = render(dot, ImageFormat::svg);
        CHECK(starts_with(svg, "<?xml"));
        CHECK(svg.find("</svg>") != std::string::npos);
      }
    }
  }
}

}  // namespace

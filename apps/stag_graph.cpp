// stag-graph: draws a model's graph (forward or training) as SVG, PNG, PDF or DOT through
// Graphviz's libraries, e.g. `stag-graph --model encoder6 --view training --collapse -o t.svg`.
// Models come from apps/examples; annotations that need a runtime are refused until it exists.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "examples/examples.hpp"

namespace {

using namespace stag;

// "batch=8" -> ("batch", 8); throws stag::Error on anything else.
std::pair<std::string, std::int64_t> parse_dim(const std::string& text) {
  const std::size_t eq = text.find('=');
  std::int64_t v = 0;
  std::size_t used = 0;
  try {
    if (eq != std::string::npos && eq > 0) v = std::stoll(text.substr(eq + 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (eq == std::string::npos || eq == 0 || used == 0 || eq + 1 + used != text.size())
    throw Error("--dim expects NAME=NUMBER (e.g. --dim batch=8), got '" + text + "'");
  return {text.substr(0, eq), v};
}

int run(int argc, char** argv) {
  CLI::App app{
      "stag-graph: draws a stag model's graph with Graphviz (in-process, no `dot` needed)"};
  std::vector<std::string> names;
  for (const auto& m : examples::example_models()) names.emplace_back(m.name);

  bool list = false, collapse = false, no_edge_shapes = false, no_clusters = false,
       left_right = false;
  std::string model, view = "forward", annotate, format, output, title;
  std::vector<std::string> dims;
  app.add_flag("--list", list, "List the models and exit");
  app.add_option("-m,--model", model, "The model to draw")->check(CLI::IsMember(names));
  app.add_option("--view", view, "forward: the model as written; training: with its backward pass")
      ->check(CLI::IsMember({"forward", "training"}))
      ->capture_default_str();
  app.add_flag("--collapse", collapse, "Draw each run of identical blocks (enc.0 .. enc.5) once");
  app.add_option("--annotate", annotate,
                 "Extra facts per node: bytes (output sizes, needs --dim); plan, kernels, time "
                 "(need the runtime)")
      ->check(CLI::IsMember({"bytes", "plan", "kernels", "time"}));
  app.add_option("--dim", dims,
                 "A symbol's value for --annotate bytes, e.g. --dim batch=8 (repeatable)");
  app.add_option("--format", format,
                 "svg, png, pdf or dot (default: from -o's extension, else dot)")
      ->check(CLI::IsMember({"svg", "png", "pdf", "dot"}));
  app.add_option("-o,--output", output, "The file to write (default: standard output)");
  app.add_option("--title", title, "The picture's caption (default: model and view)");
  app.add_flag("--no-edge-shapes", no_edge_shapes, "Leave edges unlabelled");
  app.add_flag("--no-clusters", no_clusters, "Do not box nodes by scope");
  app.add_flag("--left-right", left_right, "Lay the graph out left to right");
  CLI11_PARSE(app, argc, argv);

  if (list) {
    for (const auto& m : examples::example_models())
      std::printf("%-12s %s\n", std::string(m.name).c_str(), std::string(m.about).c_str());
    return 0;
  }
  if (model.empty()) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    std::fprintf(stderr, "stag-graph: name a model with --model (one of: %s)\n", all.c_str());
    return 2;
  }
  if (annotate == "plan" || annotate == "kernels" || annotate == "time") {
    const char* what = annotate == "plan"      ? "the memory planner"
                       : annotate == "kernels" ? "the CPU backend's kernel selection"
                                               : "a profiling run";
    std::fprintf(stderr,
                 "stag-graph: --annotate %s needs the runtime (%s), which is not built yet; "
                 "--annotate bytes works without it\n",
                 annotate.c_str(), what);
    return 2;
  }
  if (!dims.empty() && annotate != "bytes") {
    std::fprintf(stderr, "stag-graph: --dim is only used by --annotate bytes\n");
    return 2;
  }

  const examples::ExampleModel& m = *examples::find_example(model);
  const GraphView g = view == "training" ? m.training : m.forward;
  DotOptions o = dot_options();
  o.collapse = collapse;
  o.edge_shapes = !no_edge_shapes;
  o.clusters = !no_clusters;
  o.rankdir = left_right ? "LR" : "TB";
  o.title = title.empty() ? model + " (" + view + (collapse ? ", collapsed" : "") + ")" : title;
  if (annotate == "bytes") {
    std::map<std::string, std::int64_t, std::less<>> values;
    for (const std::string& d : dims) values.insert(parse_dim(d));
    o.annotations = bytes_annotations(g, values);
  }

  const ImageFormat f = !format.empty()                    ? *parse_image_format(format)
                        : !output.empty() && output != "-" ? image_format_of(output)
                                                           : ImageFormat::dot;
  const std::string dot = to_dot(g, o);
  if (output.empty() || output == "-") {
    const std::string bytes = render(dot, f);
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  } else {
    render_to_file(dot, output, f);
    std::fprintf(stderr, "stag-graph: wrote %s (%s, %d nodes drawn of %d)\n", output.c_str(),
                 std::string(image_format_name(f)).c_str(),
                 collapse ? fold_repeats(g).drawn_nodes() : g.size(), g.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const stag::Error& e) {
    std::string_view msg = e.what();
    if (msg.substr(0, 6) == "stag: ") msg.remove_prefix(6);
    std::fprintf(stderr, "stag-graph: %.*s\n", static_cast<int>(msg.size()), msg.data());
    return 1;
  }
}

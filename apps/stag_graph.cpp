// stag-graph: draws a model's graph (forward or training) as SVG, PNG, PDF or DOT through
// Graphviz's libraries, e.g. `stag-graph --model encoder6 --view training --collapse -o t.svg`.
// Models come from apps/examples; --annotate plan|kernels|time runs the model on generated
// inputs first. To add an annotation, add it to --annotate's list and to annotations_for().
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stag/runtime/viz/annotate.hpp>
#include <stag/runtime/sample_inputs.hpp>

#include "cli_common.hpp"
#include "examples/examples.hpp"

namespace {

using namespace stag;

struct RunFlags {
  int steps = 5;  // profiled steps for --annotate time
  int threads = 0;
  std::uint64_t seed = 1;
};

// Runs `g` on generated inputs and returns the annotation `what` (plan, kernels or time).
DotAnnotations annotations_for(const std::string& what, const GraphView& g, bool training,
                               const DimValues& dims, const RunFlags& f) {
  const bool time = what == "time";
  if (time && std::getenv("OMP_WAIT_POLICY") == nullptr)
    std::fprintf(
        stderr,
        "stag-graph: note: OMP_WAIT_POLICY is not set; on a busy machine OpenMP's spinning "
        "threads can make every node look slow (set OMP_WAIT_POLICY=passive)\n");
  Session s(g, {.threads = f.threads, .profile = time, .seed = f.seed, .dims = dims});
  s.set_inputs(sample_inputs(g, dims, {.seed = f.seed}));
  const int steps = time ? f.steps : 1;
  for (int i = 0; i < steps; ++i)
    s.run({.training = training, .step = static_cast<std::uint64_t>(i)});
  if (what == "plan") return plan_annotations(s);
  if (what == "kernels") return kernel_annotations(s);
  std::fprintf(stderr, "%s", s.profile_report(10).c_str());
  return time_annotations(s);
}

int run(int argc, char** argv) {
  CLI::App app{
      "stag-graph: draws a stag model's graph with Graphviz (in-process, no `dot` needed)"};
  std::vector<std::string> names;
  for (const auto& m : examples::example_models()) names.emplace_back(m.name);

  bool list = false, collapse = false, no_edge_shapes = false, no_clusters = false,
       left_right = false;
  std::string links = "auto";
  std::string model, view = "forward", annotate, format, output, title;
  std::vector<std::string> dims;
  RunFlags run_flags;
  app.add_flag("--list", list, "List the models and exit");
  app.add_option("-m,--model", model, "The model to draw")->check(CLI::IsMember(names));
  app.add_option("--view", view, "forward: the model as written; training: with its backward pass")
      ->check(CLI::IsMember({"forward", "training"}))
      ->capture_default_str();
  app.add_flag("--collapse", collapse, "Draw each run of identical blocks (enc.0 .. enc.5) once");
  app.add_option(
         "--annotate", annotate,
         "Extra facts per node: bytes (output sizes); plan (buffers, offsets), kernels, time "
         "(run the model on generated inputs). All need --dim for every symbol")
      ->check(CLI::IsMember({"bytes", "plan", "kernels", "time"}));
  app.add_option("--dim", dims, "A symbol's value for --annotate, e.g. --dim batch=8 (repeatable)");
  app.add_option("--steps", run_flags.steps,
                 "Profiled steps for --annotate time (the mean is drawn)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", run_flags.threads,
                 "Threads for --annotate plan|kernels|time (0: all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seed", run_flags.seed, "Seed of the parameters and generated inputs")
      ->capture_default_str();
  app.add_option("--format", format,
                 "svg, png, pdf or dot (default: from -o's extension, else dot)")
      ->check(CLI::IsMember({"svg", "png", "pdf", "dot"}));
  app.add_option("-o,--output", output, "The file to write (default: standard output)");
  app.add_option("--title", title, "The picture's caption (default: model and view)");
  app.add_flag("--no-edge-shapes", no_edge_shapes, "Leave edges unlabelled");
  app.add_flag("--no-clusters", no_clusters, "Do not box nodes by scope");
  app.add_option(
         "--gradient-links", links,
         "Training view: dashed lines from forward nodes to their backward nodes; auto: only up to "
         "600 drawn nodes (they slow Graphviz's layout about 20-fold on big graphs)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
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
  if (!dims.empty() && annotate.empty()) {
    std::fprintf(stderr, "stag-graph: --dim is only used by --annotate\n");
    return 2;
  }

  const examples::ExampleModel& m = *examples::find_example(model);
  const GraphView g = view == "training" ? m.training : m.forward;
  DotOptions o = dot_options();
  o.collapse = collapse;
  o.edge_shapes = !no_edge_shapes;
  o.clusters = !no_clusters;
  const int drawn = collapse ? fold_repeats(g, o.ops).drawn_nodes() : g.size();
  o.gradient_links = links == "on" || (links == "auto" && drawn <= 600);
  if (links == "auto" && !o.gradient_links && g.count_flag(kFlagBackward) > 0)
    std::fprintf(
        stderr,
        "stag-graph: %d nodes: leaving out the forward-to-backward links (--gradient-links on)\n",
        drawn);
  o.rankdir = left_right ? "LR" : "TB";
  o.title = title.empty() ? model + " (" + view + (collapse ? ", collapsed" : "") + ")" : title;
  const DimValues values = cli::parse_dims(dims);
  if (annotate == "bytes")
    o.annotations = bytes_annotations(g, values);
  else if (!annotate.empty())
    o.annotations = annotations_for(annotate, g, view == "training", values, run_flags);

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
                 std::string(image_format_name(f)).c_str(), drawn, g.size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return stag::cli::guarded_main("stag-graph", [&] { return run(argc, argv); });
}

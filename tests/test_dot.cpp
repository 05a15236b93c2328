// DOT export (graph/dot.hpp): the structure Graphviz reads back from a tiny graph and its
// training graph, folding of repeated blocks (flat and nested), and runtime annotations.
#include "dot_parse.hpp"
#include "examples/examples.hpp"
#include "harness.hpp"

#include <set>
#include <tuple>

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

// Six nodes: n0 x, n1 lin.weight, n2 lin.bias, n3 matmul, n4 add, n5 mean (the result).
constexpr auto tiny = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 5>>(g);
  auto w = param<Shape<5, 3>>(g / "lin", "weight");
  auto b = param<Shape<3>>(g / "lin", "bias", kZeros);
  return mean<0, 1>(matmul(x, w) + b);
});
constexpr auto tiny_train = grad<tiny>();

// Three blocks of two sub-blocks each (w, matmul, tanh): 18 nodes, plus x and the mean.
constexpr auto nested = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 4>>(g);
  Tensor<Shape<batch, 4>> h = x;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      const Scope s = g / "blk" / i / "sub" / j;
      auto guard = s.enter();
      h = tanh(matmul(h, param<Shape<4, 4>>(s, "w")));
    }
  return mean<0, 1>(h);
});

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int edges_between(const th::ParsedDot& d, const std::string& tail, const std::string& head) {
  int c = 0;
  for (const auto& e : d.edge_list) c += e.tail == tail && e.head == head;
  return c;
}

TEST_CASE("a tiny graph's DOT has its nodes, edges, scope cluster and shapes", "[dot]") {
  const std::string dot = to_dot(tiny, dot_options());
  const th::ParsedDot d = th::parse_dot(dot);
  REQUIRE(d.ok);
  CHECK(d.nodes == 6);
  CHECK(d.edges == 5);
  REQUIRE(d.clusters.size() == 1);
  CHECK(d.clusters[0].label == "lin");
  CHECK(d.clusters[0].nodes == 2);

  // Labels: op, name, shape with the symbol's name, dtype.
  CHECK(contains(d.attr("n0", "label"), "x"));
  CHECK(contains(d.attr("n0", "label"), "[batch, 5] f32"));
  CHECK(contains(d.attr("n1", "label"), "weight"));
  CHECK(contains(d.attr("n1", "label"), "[5, 3] f32"));
  CHECK(contains(d.attr("n3", "label"), "[batch, 3] f32"));
  CHECK(contains(d.attr("n3", "tooltip"), "matmul"));
  CHECK(contains(d.attr("n5", "label"), "result"));
  CHECK(d.attr("n5", "peripheries") == "2");

  // Edges carry the shape that flows along them.
  for (const auto& [tail, head, label] :
       {std::tuple{"n0", "n3", "[batch, 5]"}, std::tuple{"n1", "n3", "[5, 3]"},
        std::tuple{"n3", "n4", "[batch, 3]"}, std::tuple{"n2", "n4", "[3]"},
        std::tuple{"n4", "n5", "[batch, 3]"}}) {
    INFO(tail << " -> " << head);
    REQUIRE(edges_between(d, tail, head) == 1);
    for (const auto& e : d.edge_list)
      if (e.tail == tail && e.head == head) CHECK(e.label == label);
  }

  // Inputs, parameters and ops are styled apart; both parameters alike.
  CHECK(d.attr("n0", "fillcolor") != d.attr("n1", "fillcolor"));
  CHECK(d.attr("n0", "fillcolor") != d.attr("n3", "fillcolor"));
  CHECK(d.attr("n1", "fillcolor") != d.attr("n3", "fillcolor"));
  CHECK(d.attr("n1", "fillcolor") == d.attr("n2", "fillcolor"));
}

TEST_CASE("without the registry's names nodes still draw, as op numbers", "[dot]") {
  const th::ParsedDot d = th::parse_dot(to_dot(tiny, DotOptions{}));
  REQUIRE(d.ok);
  CHECK(d.nodes == 6);
  CHECK(contains(d.attr("n3", "label"), "op#" + std::to_string(op::matmul.value)));
}

TEST_CASE("a training graph sets backward nodes apart and links them to the forward ones",
          "[dot]") {
  const GraphView g = tiny_train;
  const th::ParsedDot d = th::parse_dot(to_dot(g, dot_options()));
  REQUIRE(d.ok);
  CHECK(d.nodes == g.size());

  // Expected edges: one per node input, plus one link per forward node that some backward
  // node differentiates; backward-to-backward edges are drawn reversed (dir=back).
  int inputs = 0, reversed = 0;
  std::set<int> differentiated;
  for (int n = 0; n < g.size(); ++n) {
    const Node& nd = g.node(n);
    inputs += nd.nin;
    for (int k = 0; k < nd.nin; ++k)
      reversed += (nd.flags & kFlagBackward) && (g.node(nd.in[k]).flags & kFlagBackward);
    if ((nd.flags & kFlagBackward) && nd.grad_of >= 0 &&
        !(g.node(nd.grad_of).flags & kFlagBackward))
      differentiated.insert(nd.grad_of);
  }
  CHECK(d.edges == inputs + static_cast<int>(differentiated.size()));
  int dir_back = 0, dashed_from_weight = 0;
  for (const auto& e : d.edge_list) {
    dir_back += e.dir == "back";
    dashed_from_weight += e.tail == "n1" && e.style == "dashed";
  }
  CHECK(dir_back == reversed);
  CHECK(reversed > 0);
  CHECK(dashed_from_weight == 1);
  // Without the links (big training graphs read better so), only the data edges remain.
  DotOptions no_links = dot_options();
  no_links.gradient_links = false;
  CHECK(th::parse_dot(to_dot(g, no_links)).edges == inputs);

  const th::ParsedCluster* bwd = d.cluster_labelled("backward (autodiff)");
  REQUIRE(bwd != nullptr);
  CHECK(bwd->nodes == g.count_flag(kFlagBackward));
  const int gw = g.output("grad/lin.weight");
  REQUIRE(gw >= 0);
  CHECK(contains(d.attr("n" + std::to_string(gw), "label"), "gradient of lin.weight"));
  CHECK(d.attr("n" + std::to_string(gw), "fillcolor") != d.attr("n3", "fillcolor"));
}

TEST_CASE("the collapsed view draws a 6-layer stack once with its repeat count",
          "[dot][collapse]") {
  const GraphView g = examples::find_example("encoder6")->forward;
  int in_layers = 0;
  for (int n = 0; n < g.size(); ++n) in_layers += g.name(n).rfind("enc.", 0) == 0;
  REQUIRE(in_layers % 6 == 0);
  const int expected = g.size() - in_layers + in_layers / 6;

  DotOptions o = dot_options();
  const th::ParsedDot full = th::parse_dot(to_dot(g, o));
  o.collapse = true;
  const th::ParsedDot folded = th::parse_dot(to_dot(g, o));
  REQUIRE(full.ok);
  REQUIRE(folded.ok);
  CHECK(full.nodes == g.size());
  CHECK(folded.nodes == expected);
  CHECK(folded.nodes * 4 < full.nodes);
  const th::ParsedCluster* block = folded.cluster_labelled("enc.[0-5]  \u00d76");
  REQUIRE(block != nullptr);
  CHECK(block->nodes == in_layers / 6);
  CHECK(folded.cluster_labelled("enc.[0-5].attn.q") != nullptr);
  // The output of one layer feeding the next becomes a dashed "next block" edge.
  int next = 0;
  for (const auto& e : folded.edge_list)
    next += contains(e.label, "(next block)") && e.style == "dashed";
  CHECK(next == 1);
}

TEST_CASE("in training graphs the first and last layers stay apart from the repeated ones",
          "[dot][collapse]") {
  // Layer 0 computes no gradient for its input (x needs none) and the last layer's output
  // feeds only the loss (no fan-out sums), so only the middle layers have one structure.
  for (const auto& [name, last] : {std::pair{"encoder6", 5}, std::pair{"encoder12", 11}}) {
    const GraphView g = examples::find_example(name)->training;
    const Folding f = fold_repeats(g);
    REQUIRE(f.runs.size() == 1);
    CHECK(f.runs[0].first_index == 1);
    CHECK(f.runs[0].count() == last - 1);
    DotOptions o = dot_options();
    o.collapse = true;
    const th::ParsedDot d = th::parse_dot(to_dot(g, o));
    REQUIRE(d.ok);
    CHECK(d.nodes == f.drawn_nodes());
    const std::string range =
        "enc.[1-" + std::to_string(last - 1) + "]  \u00d7" + std::to_string(last - 1);
    CHECK(d.cluster_labelled(range) != nullptr);
    CHECK(d.cluster_labelled("backward " + range) != nullptr);
    CHECK(d.cluster_labelled("enc.0") != nullptr);
    CHECK(d.cluster_labelled("enc." + std::to_string(last)) != nullptr);
  }
  // So the folded picture does not grow with depth.
  CHECK(fold_repeats(examples::find_example("encoder6")->training).drawn_nodes() ==
        fold_repeats(examples::find_example("encoder12")->training).drawn_nodes());
}

// Four layers with dropout: each dropout node has its own salt (its random stream), which
// the registry's fold_attrs leaves out of the comparison.
constexpr auto with_dropout = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 4>>(g);
  Tensor<Shape<batch, 4>> h = x;
  for (int i = 0; i < 4; ++i) {
    const Scope s = g / "layer" / i;
    auto guard = s.enter();
    h = dropout(tanh(matmul(h, param<Shape<4, 4>>(s, "w"))), 0.1);
  }
  return mean<0, 1>(h);
});

TEST_CASE("layers that differ only in their dropout streams fold", "[dot][collapse]") {
  const GraphView v = with_dropout;
  const int d0 = v.find("layer.0.w") + 3, d1 = v.find("layer.1.w") + 3;
  REQUIRE(op_id(v.node(d0).op) == OpId::dropout);
  REQUIRE(op_id(v.node(d1).op) == OpId::dropout);
  REQUIRE(v.attr(d0).i[0] != v.attr(d1).i[0]);     // the salts differ
  CHECK(fold_repeats(with_dropout).runs.empty());  // compared whole: no fold
  const Folding f = fold_repeats(with_dropout, dot_options().ops);
  REQUIRE(f.runs.size() == 1);
  CHECK(f.runs[0].count() == 4);
  CHECK(f.drawn_nodes() == 2 + 4);  // x, mean, and one layer (w, matmul, tanh, dropout)
  // The 6+6 Transformer (dropout 0.1) folds: forward, one block of six per stack is drawn;
  // training, two: layers 0-4 (layer 0's input, the embeddings, needs its gradient too) and
  // layer 5, whose output feeds only the final norm (no fan-out gradient sum).
  const examples::ExampleModel& tf = *examples::find_example("tf");
  const Folding ff = fold_repeats(tf.forward, dot_options().ops),
                ft = fold_repeats(tf.training, dot_options().ops);
  CHECK(ff.runs.size() == 2);
  CHECK(ff.drawn_nodes() * 4 < tf.forward.size());
  CHECK(ft.runs.size() == 2);
  for (const RepeatRun& r : ft.runs) {
    CHECK(r.first_index == 0);
    CHECK(r.count() == 5);
  }
  CHECK(ft.drawn_nodes() * 5 < tf.training.size() * 2);
}

TEST_CASE("repeated blocks inside repeated blocks fold again", "[dot][collapse]") {
  const Folding f = fold_repeats(nested);
  REQUIRE(f.runs.size() == 2);
  CHECK(f.drawn_nodes() == 2 + 3);  // x, mean, and one sub-block (w, matmul, tanh)
  const int w = nested.find("blk.0.sub.0.w");
  REQUIRE(w >= 0);
  CHECK(f.copies[static_cast<std::size_t>(w)] == 6);
  CHECK(f.drawn_as[static_cast<std::size_t>(nested.find("blk.2.sub.1.w"))] == w);

  DotOptions o = dot_options();
  o.collapse = true;
  const th::ParsedDot d = th::parse_dot(to_dot(nested, o));
  REQUIRE(d.ok);
  CHECK(d.nodes == 5);
  CHECK(d.cluster_labelled("blk.[0-2]  \u00d73") != nullptr);
  CHECK(d.cluster_labelled("blk.[0-2].sub.[0-1]  \u00d72") != nullptr);
  CHECK(contains(d.attr("n" + std::to_string(w), "tooltip"), "drawn once for 6 repeated nodes"));
}

TEST_CASE("annotations add lines and heat, and the hottest nodes are outlined", "[dot][annotate]") {
  DotOptions o = dot_options();
  o.annotations.title = "kernels";
  o.annotations.lines[3] = {"kernel: ref_matmul", "3.5 ms"};
  o.annotations.heat[3] = 1.0;
  o.annotations.heat[4] = 0.2;
  const th::ParsedDot d = th::parse_dot(to_dot(tiny, o));
  REQUIRE(d.ok);
  CHECK(contains(d.attr("n3", "label"), "kernel: ref_matmul"));
  CHECK(contains(d.attr("n3", "label"), "3.5 ms"));
  CHECK(d.attr("n3", "penwidth") == "3");
  CHECK(d.attr("n4", "penwidth") != "3");
  // Heat tints the fill: the hot node, the warm one and an unannotated op all differ.
  CHECK(d.attr("n3", "fillcolor") != d.attr("n4", "fillcolor"));
  CHECK(d.attr("n4", "fillcolor") != d.attr("n5", "fillcolor"));
}

TEST_CASE("bytes annotations need no runtime: sizes from symbol values", "[dot][annotate]") {
  const DotAnnotations a = bytes_annotations(tiny, {{"batch", 8}});
  // x [8, 5] f32 = 160 B is the largest; matmul [8, 3] f32 = 96 B; weight [5, 3] = 60 B.
  CHECK(a.lines.at(0) == std::vector<std::string>{"160 B"});
  CHECK(a.lines.at(3) == std::vector<std::string>{"96 B"});
  CHECK(a.lines.at(1) == std::vector<std::string>{"60 B"});
  CHECK(a.heat.at(0) == 1.0);
  CHECK(a.heat.at(3) == Approx(96.0 / 160.0));
  CHECK(a.title == "output bytes at batch=8");
  CHECK(bytes_text(3.0 * 1024 * 1024) == "3.0 MiB");
  try {
    (void)bytes_annotations(tiny, {});
    FAIL("a missing symbol value must throw");
  } catch (const Error& e) {
    CHECK(contains(e.what(), "'batch'"));
  }
}

}  // namespace

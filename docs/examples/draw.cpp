// The example of docs/pictures.md, compiled and run by ctest (doc.draw): a two-layer model drawn
// forward, for training, collapsed, and with sizes per node. Writes its pictures to argv[1].
#include <cstdio>
#include <string>

#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 32>>(g);
  Tensor<Shape<batch, seq, 32>> h = x;
  for (int l = 0; l < 4; ++l) {
    const Scope s = g / "layer" / l;
    auto guard = s.enter();
    h = h + gelu(matmul(h, param<Shape<32, 32>>(s, "weight")));
  }
  return mean<0, 1, 2>(h * h);
});
constexpr auto training = grad<net>();

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";

  // One call: graph to picture, the format from the extension.
  draw(net, dir + "/net.svg");

  // Choose what to draw: the training graph with each run of identical layers drawn once.
  DotOptions o = dot_options();
  o.collapse = true;
  o.title = "net, training, collapsed";
  draw(training, dir + "/training.pdf", o);

  // The DOT text alone needs no Graphviz and runs nothing; render() turns it into bytes.
  const std::string dot = to_dot(net, dot_options());
  const std::string png = render(dot, ImageFormat::png);

  // Annotations: output sizes for given symbol values, the largest tinted red.
  DotOptions sized = dot_options();
  sized.annotations = bytes_annotations(net, {{"batch", 32}, {"seq", 128}});
  render_to_file(to_dot(net, sized), dir + "/net-bytes.svg");

  std::printf("DOT: %zu bytes, PNG: %zu bytes, collapsed training graph: %d of %d nodes drawn\n",
              dot.size(), png.size(), fold_repeats(training).drawn_nodes(), training.size());
  return png.compare(0, 4, "\x89PNG") == 0 ? 0 : 1;
}

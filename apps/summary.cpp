// stag-summary: builds a model graph at compile time and prints what it holds.
#include <cstdio>
#include <map>

#include <stag/stag.hpp>

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto graph = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 64>>(g);
  auto w = param<Shape<64, 64>>(g / "proj", "weight");
  return mean<0, 1, 2>(softmax<-1>(matmul(x, w)));
});

void print_summary(const GraphView& g) {
  std::map<std::string_view, int> per_op;
  for (int n = 0; n < g.size(); ++n) ++per_op[op_name(g.node(n).op)];
  std::printf("%d nodes\n", g.size());
  for (const auto& [name, c] : per_op) std::printf("  %-22s %d\n", std::string(name).c_str(), c);
  std::printf("parameters:\n");
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam)
      std::printf("  %-30s %s\n", g.name(n).c_str(), shape_text(g, g.shape(n)).c_str());
  std::printf("inputs:\n");
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagInput)
      std::printf("  %-30s %s %s\n", g.name(n).c_str(),
                  std::string(dtype_name(g.node(n).dtype)).c_str(),
                  shape_text(g, g.shape(n)).c_str());
}
}  // namespace

int main() {
  print_summary(graph);
  return 0;
}

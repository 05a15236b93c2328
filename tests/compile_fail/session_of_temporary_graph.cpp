// Mistake: a Session over a graph made as a temporary, `Session s(grad<net>())`. The Session keeps
// a view of the graph's tables, which die at the end of the statement (the first run would read
// freed stack), and a temporary graph is built at run time, field by field, which costs g++
// seconds per graph. Refused: a temporary graph does not convert to a view; name the graph.
// clang-format off
// expect-first-gcc: error: use of deleted function 'stag::Graph<Z>::operator stag::GraphView\(\) const &&
// expect-first-clang: error: conversion function from 'Graph<stag::GraphSizes\{.*\}>' to 'const stag::GraphView' invokes a deleted function
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;

constexpr auto net = model([](Builder& b) {
  auto x = input<"x", Shape<2, 3>>(b);
  auto w = param<Shape<3, 4>>(b / "proj", "weight");
  return sum<0, 1>(matmul(x, w));
});

int main() {
#ifdef STAG_BAD
  Session s(grad<net>());
#else
  static constexpr auto train = grad<net>();
  Session s(train);
#endif
  return s.graph().size() > 0 ? 0 : 1;
}

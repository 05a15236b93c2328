// A program outside the stag tree: finds the installed package, builds a graph, evaluates it.
#include <cstdio>

#include <stag/stag.hpp>

constexpr auto batch = stag::sym<"batch">;
constexpr auto graph = stag::model([](stag::Builder& g) {
  auto x = stag::input<"x", stag::Shape<batch, 3>>(g);
  auto w = stag::param<stag::Shape<3, 2>>(g / "lin", "weight");
  return stag::sum<0, 1>(stag::matmul(x, w));
});
static_assert(graph.count(stag::op::matmul) == 1);

int main() {
  stag::NamedArrays params = stag::make_params(graph, {}, 1);
  params["lin.weight"] = stag::Array::from<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  stag::NamedArrays in{{"x", stag::Array::from<float>({1, 3}, {1, 1, 1})}};
  const double y = stag::evaluate_reference(graph, in, params).result().at(0);
  std::printf("consumer: %g\n", y);
  return y == 21.0 ? 0 : 1;
}

// Mistake: differentiating through an op that has no VJP. unary_backward (the gradient op of the
// unary ops) is built here as a forward op through the untyped Ref API, on the path from the
// parameter to the loss; stag::grad reaches it and stops compilation, and the trace names the op.
// clang-format off
// expect: stag::grad: an op on a differentiable path has no VJP
// expect-gcc: throw_missing_vjp\(const char\*\) \[with stag::OpId Id = stag::OpId::unary_backward\]
// expect-gcc: required from here
// expect-clang: in call to 'missing_vjp_unary_backward\(c\)'
// expect-clang: in instantiation of function template specialization 'stag::grad<g>' requested here
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 5>>(b);
  auto h = x * param<Shape<5>>(b / "scale", "weight");
#ifdef STAG_BAD
  const Ref d = unary_backward(OpId::tanh, h.ref(), tanh(h).ref(), h.ref());
  auto y = Tensor<Shape<batch, 5>>{d.b, d.id};
#else
  auto y = tanh(h);
#endif
  return sum<0, 1>(y);
});
constexpr auto training_graph = grad<g>();

int main() {
  return training_graph.size() > g.size() ? 0 : 1;
}

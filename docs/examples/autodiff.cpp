// The example behind docs/autodiff.md: a small model whose training graph shows each rule of the
// autodiff pass (fan-out, integer inputs, an unused parameter, pruning, stop_gradient), checked
// at compile time with static_assert and at run time with stag::gradcheck.
#include <stag/runtime/gradcheck.hpp>

#include "doc_tools.hpp"

using namespace stag;
constexpr auto batch = sym<"batch">;

// snippet-begin: model
constexpr auto net = model([](Builder& g) {
  auto ids = input<"ids", Shape<batch, 4>, DType::i32>(g);  // integers: no gradient
  auto x = input<"x", Shape<batch, 4, 6>>(g);               // a float input
  auto table = param<Shape<10, 6>>(g / "embed", "weight");
  auto w = param<Shape<6, 6>>(g / "mix", "weight");
  auto spare = param<Shape<3>>(g / "spare", "weight");  // not on the loss's path
  (void)spare;
  auto h = embedding(ids, table) + matmul(x, w);  // dx (a matmul) only when asked for
  auto y = tanh(matmul(h, w));                    // w fans out: its gradients add up
  return mean<0, 1, 2>(y * y);                    // the loss: a float scalar
});
constexpr auto training = grad<net>();         // gradients of every parameter
constexpr auto training_x = grad<net, "x">();  // ... and of the float input "x"
// snippet-end: model

// snippet-begin: asserts
static_assert(training.shape(training.output("grad/mix.weight")) == Shape<6, 6>::value);
static_assert(training.shape(training.output("grad/embed.weight")) == Shape<10, 6>::value);
static_assert(training.output("grad/spare.weight") >= 0);  // an output of zeros
static_assert(training.output("grad/x") < 0 && training_x.output("grad/x") >= 0);
static_assert(training.count(op::embedding_backward) == 1);
static_assert(training.count(op::matmul) < training_x.count(op::matmul));  // x's matmul
// snippet-end: asserts

// snippet-begin: stop_gradient
constexpr auto detached = model([](Builder& g) {
  auto w = param<Shape<3>>(g / "w", "weight");
  return sum<0>(stop_gradient(w) * w);  // d/dw = w (the stopped factor is a constant), not 2w
});
constexpr auto detached_training = grad<detached>();
// snippet-end: stop_gradient

int main() {
  // snippet-begin: gradcheck
  const NamedArrays in{{"ids", docs::random_ids({3, 4}, 10, 1)},
                       {"x", docs::random_floats({3, 4, 6}, 2)}};
  const NamedArrays params = make_params(net, {}, 3);
  const GradcheckReport r = gradcheck(training_x, in, params, {.max_elements = 1000});
  std::printf("%s\n", r.text().c_str());  // "gradcheck passed: 171 elements, max abs err ..."
  // snippet-end: gradcheck
  docs::expect(r.ok && r.checked > 0, "the gradients match central differences");

  const NamedArrays w{{"w.weight", Array::from<float>({3}, {1.f, -2.f, 0.5f})}};
  const Array dw = evaluate_reference(detached_training, {}, w)["grad/w.weight"];
  docs::expect(dw.at(0) == 1 && dw.at(1) == -2 && dw.at(2) == 0.5,
               "stop_gradient: d/dw sum(sg(w) * w) = w");
  return 0;
}

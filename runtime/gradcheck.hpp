// gradcheck: compares the gradients of a training graph (stag::grad<...>) with central
// differences of its loss, in f64 on the reference evaluator. For users checking their own
// graphs and VJPs; the report names the worst tensor and element.
#pragma once

#include <stag/runtime/reference.hpp>

namespace stag {

struct GradcheckOptions {
  double eps = 1e-6;   // central difference step (in f64)
  double rtol = 1e-5;  // |analytic - numeric| <= atol + rtol * max(|a|, |n|)
  double atol = 1e-8;
  std::int64_t max_elements = 48;  // per tensor; larger tensors are sampled evenly
  EvalOptions eval{};              // dims, seed and mode (dropout masks are reproducible)
};

struct GradcheckReport {
  bool ok = true;
  int checked = 0;  // number of elements compared
  double max_abs_err = 0;
  double max_rel_err = 0;
  std::string worst;  // tensor with the largest violation (or error)
  std::int64_t worst_index = -1;
  double analytic = 0, numeric = 0;
  std::string text() const;
};

GradcheckReport gradcheck(const GraphView& train, const NamedArrays& inputs,
                          const NamedArrays& params, const GradcheckOptions& opts = {});

}  // namespace stag

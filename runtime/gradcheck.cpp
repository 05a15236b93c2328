// Central-difference gradient checking on the reference evaluator.
#include <cmath>
#include <sstream>

#include <stag/runtime/gradcheck.hpp>

namespace stag {

std::string GradcheckReport::text() const {
  std::ostringstream s;
  s.precision(6);
  s << (ok ? "gradcheck passed" : "gradcheck FAILED") << ": " << checked
    << " elements, max abs err " << max_abs_err << ", max rel err " << max_rel_err;
  if (!worst.empty())
    s << "; worst: " << worst << "[" << worst_index << "] analytic " << analytic << " numeric "
      << numeric;
  return s.str();
}

GradcheckReport gradcheck(const GraphView& train, const NamedArrays& inputs,
                          const NamedArrays& params, const GradcheckOptions& opts) {
  EvalOptions eo = opts.eval;
  eo.f64 = true;  // f32 graphs run in double precision; f64 tensors are accepted for f32 nodes
  auto widen = [](const NamedArrays& xs) {
    NamedArrays out;
    for (const auto& [k, v] : xs)
      out.emplace(k, v.to(v.dtype() == DType::f32 ? DType::f64 : v.dtype(), true));
    return out;
  };
  const NamedArrays inputs64 = widen(inputs), params64 = widen(params);
  const Evaluation base = evaluate_reference(train, inputs64, params64, eo);
  // The perturbed runs need the loss alone: skip the gradient nodes (most of a training graph).
  EvalOptions loss_only = eo;
  loss_only.result_only = true;
  GradcheckReport rep;
  for (const OutputEntry& o : train.outputs) {
    if (o.grad_of < 0) continue;
    const std::string name = train.name(o.grad_of);
    const bool is_param = (train.node(o.grad_of).flags & kFlagParam) != 0;
    const Array analytic = base.node(o.node);
    const Array& orig = (is_param ? params64 : inputs64).at(name);
    const std::int64_t n = orig.numel();
    const std::int64_t stride =
        n <= opts.max_elements ? 1 : (n + opts.max_elements - 1) / opts.max_elements;
    for (std::int64_t i = 0; i < n; i += stride) {
      NamedArrays ins = inputs64, ps = params64;
      NamedArrays& dst = is_param ? ps : ins;
      const double x0 = orig.at(i);
      Array moved = orig.clone();
      moved.set(i, x0 + opts.eps);
      dst[name] = moved;
      const double fp = evaluate_reference(train, ins, ps, loss_only).result().at(0);
      moved = orig.clone();
      moved.set(i, x0 - opts.eps);
      dst[name] = moved;
      const double fm = evaluate_reference(train, ins, ps, loss_only).result().at(0);
      const double num = (fp - fm) / (2 * opts.eps);
      const double ana = analytic.at(i);
      const double abs_err = std::abs(ana - num);
      const double scale = std::max(std::abs(ana), std::abs(num));
      const double rel_err = scale > 0 ? abs_err / scale : 0;
      ++rep.checked;
      const bool bad = !(abs_err <= opts.atol + opts.rtol * scale);
      if (abs_err > rep.max_abs_err) rep.max_abs_err = abs_err;
      if (rel_err > rep.max_rel_err) rep.max_rel_err = rel_err;
      if (bad && (rep.ok || abs_err > std::abs(rep.analytic - rep.numeric))) {
        rep.ok = false;
        rep.worst = std::string(kGradPrefix).append(name);
        rep.worst_index = i;
        rep.analytic = ana;
        rep.numeric = num;
      }
    }
  }
  return rep;
}

}  // namespace stag

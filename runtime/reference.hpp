// The reference evaluator: runs any graph node by node with the plain-loop reference kernels,
// in f32 or in f64 (every f32 tensor promoted, for gradient checks). It is the oracle every
// backend is tested against, so it favours obviousness over speed.
#pragma once

#include <stag/runtime/bind.hpp>

namespace stag {

struct EvalOptions {
  bool f64 = false;        // compute every f32 node in double precision
  bool training = false;   // dropout active
  std::uint64_t seed = 0;  // dropout's counter-based RNG
  std::uint64_t step = 0;
  std::int64_t row_offset = 0, rows = 0;                    // data parallelism (RunState)
  std::map<std::string, std::int64_t, std::less<>> dims{};  // symbols no input determines
  // Only the nodes the graph's result depends on; the others' values stay empty. What
  // gradcheck's perturbed runs need: the loss, not the gradient nodes after it.
  bool result_only = false;
};

// The value of every node after a run.
class Evaluation {
 public:
  Evaluation(GraphView g, std::vector<Array> values) : g_(g), values_(std::move(values)) {}
  const Array& node(int n) const { return values_.at(static_cast<std::size_t>(n)); }
  // By node name, output name, or `grad/<param>`.
  const Array& operator[](std::string_view name) const;
  // The graph's result (the loss of a training graph).
  const Array& result() const;
  const GraphView& graph() const { return g_; }

 private:
  GraphView g_;
  std::vector<Array> values_;
};

// NOTE: as a session's step does, the optimizer updates and cache_write write into the arrays
// given in `params` (and cache_write into an input cache): several steps of a training graph or
// of a decode graph chain through them. Pass clones to keep the originals (a session's params()
// share storage with the session).
Evaluation evaluate_reference(const GraphView& g, const NamedArrays& inputs,
                              const NamedArrays& params, const EvalOptions& opts = {});

}  // namespace stag

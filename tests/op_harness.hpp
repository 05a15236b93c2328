// The one harness every op test goes through (ggml's test-backend-ops): for each binding of
// the symbolic dims it evaluates the op's graph on the reference evaluator in f32 and f64
// (they must agree), runs a central-difference gradient check of the training graph, and
// compares every registered backend (oneDNN, CUDA) against the reference.
#pragma once

#include <functional>
#include <vector>

#include "harness.hpp"

namespace th {

// A backend under test: runs a graph and returns the value of every node the caller asks for.
struct Backend {
  std::string name;
  // Evaluates `g` on the backend; returns the values of `g`'s outputs and result by node index.
  std::function<std::vector<std::pair<int, stag::Array>>(
      const stag::GraphView& g, const stag::NamedArrays& inputs, const stag::NamedArrays& params,
      const stag::EvalOptions&)>
      run;
  double tolerance = 1e-4;  // max abs difference from the reference, relative to max(1, |ref|)
  // Non-empty: why the backend cannot run this graph (an op without a kernel on the device);
  // the harness then warns and checks the other backends.
  // (The evaluation options too: the ONNX export is for inference and skips training runs.)
  std::function<std::string(const stag::GraphView&, const stag::EvalOptions&)> unsupported;
};

// The backends under test: the CPU session (sequential and TBB-parallel), or with
// STAG_TEST_DEVICE=cuda only the CUDA session (ctest label `cuda`, run where a GPU is), or with
// STAG_TEST_DEVICE=cuda_interpret only the CUDA backend in interpret mode (label
// cuda_interpret: the CUDA kernels on the CPU, in every run), or with STAG_TEST_DEVICE=onnx only
// the graph exported to ONNX and run by ONNX Runtime (label onnx: runtime/onnx/export.hpp).
std::vector<Backend>& backends();
// True (with a warning naming the reason) when `be` cannot run `g`.
bool skips(const Backend& be, const stag::GraphView& g, const stag::EvalOptions& eval = {});

struct OpCheck {
  std::string what;         // shown on failure
  stag::GraphView forward;  // a graph whose result is a scalar built from the op
  stag::GraphView train;    // stag::grad<...> of `forward`; empty: no gradient check
  // Inputs for binding number k (different symbolic dims per k).
  std::function<stag::NamedArrays(int k)> inputs;
  int bindings = 1;
  std::uint64_t param_seed = 1;
  stag::EvalOptions eval{};  // dims for symbols no input fixes, training mode, seed
  stag::GradcheckOptions grad{};
  double f32_tolerance = 1e-4;  // f32 vs f64 reference, relative to max(1, |f64|)
};

void check_op(const OpCheck& c);

}  // namespace th

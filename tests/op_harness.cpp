// The op harness: reference f32 vs f64, gradient check, and every registered backend.
#include "op_harness.hpp"

#include <stag/runtime/onnx/export.hpp>

#include "ort_run.hpp"
#include "test_files.hpp"

namespace th {

namespace {
// The CPU session as a backend: parameters copied from the reference's, every output and the
// result kept; `schedule` picks sequential or TBB-parallel execution. Poisoning freed buffers
// makes any read of a dead buffer show up as NaN.
Backend session_backend(stag::Device device, stag::Schedule schedule, std::string name) {
  Backend be;
  be.name = std::move(name);
  be.run = [device, schedule](const stag::GraphView& g, const stag::NamedArrays& inputs,
                              const stag::NamedArrays& params, const stag::EvalOptions& eval) {
    stag::SessionOptions so;
    so.device = device;
    so.schedule = schedule;
    so.poison_freed = schedule == stag::Schedule::sequential && device == stag::Device::cpu;
    if (std::getenv("STAG_TEST_NOFUSE")) so.fuse = false;
    if (std::getenv("STAG_TEST_NOINPLACE")) so.in_place = false;
    so.seed = eval.seed;
    so.dims = eval.dims;
    stag::Session s(g, so);
    s.set_inputs(inputs);
    s.run({eval.training, eval.step});  // creates parameters for symbolic dims
    s.set_params(params);
    s.run({eval.training, eval.step});
    std::vector<std::pair<int, stag::Array>> out;
    if (g.result >= 0) out.emplace_back(g.result, s.get(g.result));
    for (const stag::OutputEntry& o : g.outputs) out.emplace_back(o.node, s.get(o.node));
    return out;
  };
  if (device != stag::Device::cpu)
    be.unsupported = [device](const stag::GraphView& g, const stag::EvalOptions&) {
      return stag::device_unsupported(device, g);
    };
  return be;
}

// The graph exported to ONNX (its outputs and result) and run by ONNX Runtime; graphs the
// exporter refuses (gradients, losses, ...) and training runs are skipped with the reason.
Backend onnx_backend() {
  Backend be;
  be.name = "onnx";
  be.run = [](const stag::GraphView& g, const stag::NamedArrays& inputs,
              const stag::NamedArrays& params, const stag::EvalOptions& eval) {
    TempDir tmp("onnx_op");
    stag::OnnxOptions o;
    o.dims = eval.dims;
    // STAG_ONNX_ATTENTION_OP=1: the fused attention as the opset-23 Attention op (onnx.attention_op).
    o.attention_op = std::getenv("STAG_ONNX_ATTENTION_OP") != nullptr;
    stag::export_onnx(g, params, tmp / "op.onnx", o);
    stag::NamedArrays feed;
    for (const std::string& name : stag::onnx_inputs(g, o)) feed.emplace(name, inputs.at(name));
    const stag::NamedArrays got = ort_run(tmp / "op.onnx", feed);
    std::vector<std::pair<int, stag::Array>> out;
    bool result_named = false;
    for (const stag::OutputEntry& e : g.outputs) {  // named as stag::onnx_model names them
      out.emplace_back(e.node,
                       got.at(e.grad_of < 0 ? std::string(e.name)
                                            : std::string(stag::kGradPrefix) + g.name(e.grad_of)));
      result_named = result_named || e.node == g.result;
    }
    if (g.result >= 0 && !result_named) out.emplace_back(g.result, got.at("result"));
    return out;
  };
  be.unsupported = [](const stag::GraphView& g, const stag::EvalOptions& eval) -> std::string {
    if (eval.training) return "a training run (an exported graph is for inference)";
    return stag::onnx_unsupported(g);
  };
  return be;
}

std::vector<Backend> make_backends() {
  const char* dev = std::getenv("STAG_TEST_DEVICE");
  if (dev != nullptr && std::string(dev) == "cuda") {
    std::string why;
    if (!stag::cuda_available(&why))
      throw std::runtime_error("STAG_TEST_DEVICE=cuda, but " + why);  // never a silent pass
    return {session_backend(stag::Device::cuda, stag::Schedule::sequential, "cuda")};
  }
  if (dev != nullptr && std::string(dev) == "onnx") {
    if (ort_dir().empty())  // never a silent pass
      throw std::runtime_error(
          "STAG_TEST_DEVICE=onnx, but ONNX Runtime is not installed (tools/data.sh --only "
          "onnxruntime)");
    return {onnx_backend()};
  }
  if (dev != nullptr && std::string(dev) == "cuda_interpret")
    return {session_backend(stag::Device::cuda_interpret, stag::Schedule::sequential,
                            "cuda_interpret")};
  return {session_backend(stag::Device::cpu, stag::Schedule::sequential, "cpu"),
          session_backend(stag::Device::cpu, stag::Schedule::parallel, "cpu-parallel")};
}
}  // namespace

bool skips(const Backend& be, const stag::GraphView& g, const stag::EvalOptions& eval) {
  if (!be.unsupported) return false;
  const std::string why = be.unsupported(g, eval);
  if (why.empty()) return false;
  WARN(be.name << " skips a graph: " << why);
  return true;
}

std::vector<Backend>& backends() {
  static std::vector<Backend> all = make_backends();
  return all;
}

namespace {
void require_agree(const stag::Array& got, const stag::Array& want, double tol,
                   const std::string& what) {
  REQUIRE(got.dims() == want.dims());
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    const bool same_inf = std::isinf(g[i]) && g[i] == w[i];
    if (both_nan || same_inf) continue;
    const double d = std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i]));
    if (!(d <= worst)) {
      worst = d;
      at = i;
    }
  }
  INFO(what << ": largest scaled difference " << worst << " at " << at);
  REQUIRE(worst <= tol);
}
}  // namespace

void check_op(const OpCheck& c) {
  INFO("op check: " << c.what);
  for (int k = 0; k < c.bindings; ++k) {
    INFO("binding " << k);
    const stag::NamedArrays in = c.inputs(k);
    stag::Bindings b = stag::bind_symbols(c.forward, in, nullptr, c.eval.dims);
    stag::NamedArrays params;
    stag::init_params(c.forward, b, params, c.param_seed);
    stag::EvalOptions e32 = c.eval, e64 = c.eval;
    e64.f64 = true;
    const stag::Evaluation r32 = stag::evaluate_reference(c.forward, in, params, e32);
    const stag::Evaluation r64 = stag::evaluate_reference(c.forward, in, params, e64);
    for (int n = 0; n < c.forward.size(); ++n)
      if (stag::is_float(c.forward.node(n).dtype))
        require_agree(r32.node(n), r64.node(n).to(r32.node(n).dtype()), c.f32_tolerance,
                      "f32 vs f64 at node " + c.forward.name(n));
    if (c.train.size() > 0) {
      stag::GradcheckOptions go = c.grad;
      go.eval = c.eval;
      require_gradcheck(c.train, in, params, go);
    }
    for (const Backend& be : backends()) {
      INFO("backend " << be.name);
      const stag::GraphView graphs[2] = {c.forward, c.train};
      for (const stag::GraphView& g : graphs) {
        if (g.size() == 0) continue;
        if (skips(be, g, c.eval)) continue;
        const stag::Evaluation ref = stag::evaluate_reference(g, in, params, c.eval);
        for (const auto& [node, value] : be.run(g, in, params, c.eval))
          require_agree(value, ref.node(node), be.tolerance,
                        be.name + " vs reference at " + g.name(node));
      }
    }
  }
}

}  // namespace th

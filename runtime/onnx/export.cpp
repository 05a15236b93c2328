// ONNX export (export.hpp): one exporter per op (exporter.hpp; export_ops.cpp,
// export_attention.cpp), writing standard ONNX ops (opset 17) into a ModelProto of Debian's
// libonnx; here the table of exporters and refusals, the model around the graph, and the checker
// and shape inference, which run before the model leaves.
#include <stag/runtime/onnx/export.hpp>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <stag/ops/kernel.hpp>
#include <stag/ops/registry.hpp>
#include <stag/ops/unary/math.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/onnx/exporter.hpp>

namespace stag {

namespace {

using namespace onnx_export;

constexpr const char* kBackward =
    "a gradient op: export the inference graph (the model function), not its training graph";
constexpr const char* kOptimizer = "an optimizer update: export the inference graph";
constexpr const char* kLoss =
    "a training loss: export the outputs inference needs (OnnxOptions::outputs, e.g. logits)";

// Every op: its exporter, or why it has none. No default case: a new op without an entry
// returns {} and fails the static_assert below, which names it.
constexpr OnnxSupport entry(OpId op) {
  switch (op) {
    case OpId::input:
      return {&ex_input};
    case OpId::parameter:
      return {&ex_parameter};
    case OpId::constant:
      return {&ex_constant};
    case OpId::positions:
      return {&ex_positions};
    case OpId::numel:
      return {&ex_numel};
    case OpId::add:
    case OpId::sub:
    case OpId::mul:
    case OpId::div:
    case OpId::minimum:
    case OpId::maximum:
      return {&ex_binary};
    case OpId::neg:
    case OpId::exp:
    case OpId::log:
    case OpId::sqrt:
    case OpId::rsqrt:
    case OpId::pow_scalar:
    case OpId::abs:
    case OpId::relu:
    case OpId::gelu:
    case OpId::gelu_tanh:
    case OpId::silu:
    case OpId::sigmoid:
    case OpId::tanh:
    case OpId::sin:
    case OpId::cos:
    case OpId::elu:
    case OpId::floor:
    case OpId::clamp:
    case OpId::mod:
      return {&ex_unary};
    case OpId::matmul:
      return {&ex_matmul};
    case OpId::permute:
      return {&ex_permute};
    case OpId::reshape:
    case OpId::unsqueeze:
    case OpId::squeeze:
      return {&ex_reshape};
    case OpId::expand:
      return {&ex_expand};
    case OpId::slice:
      return {&ex_slice};
    case OpId::concat:
      return {&ex_concat};
    case OpId::sum:
    case OpId::mean:
    case OpId::max:
      return {&ex_reduce};
    case OpId::argmax:
      return {&ex_argmax};
    case OpId::softmax:
    case OpId::log_softmax:
      return {&ex_softmax};
    case OpId::lt:
    case OpId::le:
    case OpId::eq:
      return {&ex_compare};
    case OpId::logical_and:
    case OpId::logical_or:
    case OpId::logical_not:
      return {&ex_logical};
    case OpId::where:
      return {&ex_where};
    case OpId::masked_fill:
      return {&ex_masked_fill};
    case OpId::causal_mask:
      return {&ex_causal_mask};
    case OpId::padding_mask:
      return {&ex_padding_mask};
    case OpId::layer_norm:
      return {&ex_layer_norm};
    case OpId::rms_norm:
      return {&ex_rms_norm};
    case OpId::embedding:
      return {&ex_embedding};
    case OpId::rope:
      return {&ex_rope};
    case OpId::attention:
      return {&ex_attention};
    case OpId::dropout:  // the identity in inference
    case OpId::stop_gradient:
      return {&ex_identity};
    case OpId::cast:
      return {&ex_cast};
    case OpId::cumsum:
      return {&ex_cumsum};
    case OpId::unary_backward:
    case OpId::slice_backward:
    case OpId::concat_backward:
    case OpId::softmax_backward:
    case OpId::log_softmax_backward:
    case OpId::layer_norm_backward:
    case OpId::rms_norm_backward:
    case OpId::embedding_backward:
    case OpId::cross_entropy_backward:
    case OpId::attention_backward:
    case OpId::attention_backward_kv:
      return {nullptr, kBackward};
    case OpId::sgd_update:
    case OpId::adam_update:
      return {nullptr, kOptimizer};
    case OpId::cross_entropy:
    case OpId::mse_loss:
      return {nullptr, kLoss};
    case OpId::cache_write:
      return {&ex_cache_write};
    case OpId::count:
      break;
  }
  return {};
}

#define STAG_X(name)                                                                         \
  static_assert(entry(OpId::name).fn != nullptr || entry(OpId::name).unsupported != nullptr, \
                "stag ONNX export: op '" #name                                               \
                "' has neither an exporter nor a reason in runtime/onnx/export.cpp");
STAG_OP_LIST(STAG_X)
#undef STAG_X

// The outputs to export: (ONNX name, node).
std::vector<std::pair<std::string, int>> chosen_outputs(const GraphView& g, const OnnxOptions& o) {
  std::vector<std::pair<std::string, int>> out;
  if (o.outputs.empty()) {
    bool result_named = false;
    for (const OutputEntry& e : g.outputs) {
      // A gradient output (a training graph) is named as Session::get names it; its backward
      // nodes are then what onnx_unsupported reports.
      out.emplace_back(
          e.grad_of < 0 ? std::string(e.name) : std::string(kGradPrefix) + g.name(e.grad_of),
          e.node);
      result_named = result_named || e.node == g.result;
    }
    if (g.result >= 0 && !result_named) out.emplace_back("result", g.result);
  } else {
    for (const std::string& name : o.outputs) {
      int node = name == "result" ? g.result : g.output(name);
      if (node < 0 && name != "result") node = g.find(name);  // a named intermediate node
      if (node < 0) {
        std::string known;
        for (const OutputEntry& e : g.outputs)
          if (e.grad_of < 0) known += (known.empty() ? "" : ", ") + std::string(e.name);
        throw Error("stag: onnx export: the graph has no output '" + name + "' (outputs: " +
                    (known.empty() ? "none" : known) + "; \"result\" is the graph's result)");
      }
      out.emplace_back(name, node);
    }
  }
  if (out.empty()) throw Error("stag: onnx export: the graph has no outputs to export");
  return out;
}

std::vector<char> needed_nodes(const GraphView& g,
                               const std::vector<std::pair<std::string, int>>& outputs) {
  std::vector<char> need(static_cast<std::size_t>(g.size()), 0);
  std::vector<int> stack;
  for (const auto& o : outputs) stack.push_back(o.second);
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (need[static_cast<std::size_t>(n)]) continue;
    need[static_cast<std::size_t>(n)] = 1;
    for (int k = 0; k < g.node(n).nin; ++k) stack.push_back(g.node(n).in[k]);
  }
  return need;
}

// Why node n cannot be exported, beyond its op's entry; empty when it can.
std::string node_refusal(const GraphView& g, int n) {
  const Node& nd = g.node(n);
  const OnnxSupport s = entry(op_id(nd.op));
  if (s.fn == nullptr) return s.unsupported;
  if (nd.dtype == DType::bf16)
    return "bf16 values: export the f32 graph (ONNX Runtime's CPU kernels have no bf16 matmul)";
  const OpId id = op_id(nd.op);
  const ShapeV& s0 = nd.nin > 0 ? g.shape(nd.in[0]) : g.shape(n);
  if (id == OpId::attention) {
    const Attrs& a = g.attr(n);
    if (a.i[4] == 2)
      return "a score_mod / mask_mod (compiled C++ functions have no ONNX form); write the score "
             "change as graph ops (an additive bias, a keep mask) to export it";
    if (!s0[s0.rank - 1].is_static()) return "a symbolic head dim";
    if (s0.rank == 4 && (!s0[1].is_static() || !g.shape(nd.in[1])[1].is_static()))
      return "a symbolic head count";
  }
  if (id == OpId::rope && !g.shape(n)[g.shape(n).rank - 1].is_static())
    return "a symbolic head dim";
  return {};
}

}  // namespace

std::string onnx_unsupported(const GraphView& g, const OnnxOptions& opts) {
  const auto outputs = chosen_outputs(g, opts);
  const std::vector<char> need = needed_nodes(g, outputs);
  for (int n = 0; n < g.size(); ++n) {
    if (!need[static_cast<std::size_t>(n)]) continue;
    const std::string why = node_refusal(g, n);
    if (!why.empty())
      return "stag: onnx export: node '" + g.name(n) + "' (op " +
             std::string(op_name(g.node(n).op)) + ") cannot be exported: " + why;
  }
  return {};
}

std::vector<std::string> onnx_inputs(const GraphView& g, const OnnxOptions& opts) {
  const std::vector<char> need = needed_nodes(g, chosen_outputs(g, opts));
  std::vector<std::string> names;
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && is_model_input(g, n)) names.push_back(g.name(n));
  return names;
}

namespace {
// The serialised model; with `data`, parameters of 1 KiB or more go there as external data
// (file `location`).
std::string build_model(const GraphView& g, const NamedArrays& params, const OnnxOptions& opts,
                        std::ostream* data, const std::string& location) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  if (const std::string why = onnx_unsupported(g, opts); !why.empty()) throw Error(why);
  const auto outputs = chosen_outputs(g, opts);
  const std::vector<char> need = needed_nodes(g, outputs);

  onnx::ModelProto model;
  model.set_ir_version(opts.attention_op ? 10 : 8);
  model.set_producer_name("stag");
  model.set_producer_version("0.1");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opts.attention_op ? kOnnxAttentionOpset : kOnnxOpset);
  onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(opts.graph_name);

  Exporter e(g, &params, opts, gp);
  if (data != nullptr) e.use_external_data(data, location);
  e.find_symbol_sources(need);
  // Inputs first, in graph order, so the model's inputs read like the graph's.
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && is_model_input(g, n)) e.add_input(n);
  for (int n = 0; n < g.size(); ++n) {
    if (!need[static_cast<std::size_t>(n)] || is_model_input(g, n)) continue;
    entry(op_id(g.node(n).op)).fn(e, n);
  }
  for (const auto& [name, node] : outputs) e.add_output(name, node);
  // Each state tensor's last write, as present.<name>: the caller feeds it back next step.
  std::map<int, int> last_write;
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && op_id(g.node(n).op) == OpId::cache_write)
      last_write[g.node(n).in[0]] = n;
  for (const auto& [state, node] : last_write) e.add_output("present." + g.name(state), node);

  try {
    // With external data the checker reads the data file, which is not in place yet:
    // export_onnx checks the written model from its path instead (check_written).
    // libonnx 1.12 knows opset 17 at most: an opset-23 model (attention_op) is not checked.
    if (!opts.attention_op) {
      if (data == nullptr) onnx::checker::check_model(model);
      onnx::shape_inference::InferShapes(model);
    }
  } catch (const std::exception& ex) {
    throw Error(std::string("stag: onnx export: the ONNX checker refused the model: ") + ex.what());
  }
  if (model.ByteSizeLong() > kOnnxInlineLimit)
    throw Error("stag: onnx export: the model is " + std::to_string(model.ByteSizeLong() >> 20) +
                " MiB, over protobuf's 2 GiB limit: export_onnx with "
                "OnnxOptions::external_data writes the weights beside it");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error("stag: onnx export: the model could not be serialised");
  return bytes;
}

std::int64_t parameter_bytes(const GraphView& g, const NamedArrays& params) {
  std::int64_t total = 0;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam)
      if (auto it = params.find(g.name(n)); it != params.end())
        total += static_cast<std::int64_t>(it->second.bytes());
  return total;
}

// Writes `bytes` to path's temporary file, checked; the caller renames it into place.
void write_checked(const std::string& tmp, const std::string& path,
                   const std::function<void(std::ostream&)>& write) {
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw Error("stag: onnx export: cannot write " + path + ": the folder " + dir.string() +
                  " does not exist");
    throw Error("stag: onnx export: cannot write " + tmp + ": " + std::strerror(errno));
  }
  try {
    write(f);
  } catch (...) {
    f.close();
    std::remove(tmp.c_str());
    throw;
  }
  f.flush();
  if (!f) {
    f.close();
    std::remove(tmp.c_str());
    throw Error("stag: onnx export: writing " + path + " failed (disk full?)");
  }
}

void rename_into_place(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("stag: onnx export: cannot rename " + tmp + " to " + path);
  }
}
}  // namespace

std::string onnx_model(const GraphView& g, const NamedArrays& params, const OnnxOptions& opts) {
  return build_model(g, params, opts, nullptr, {});
}

void export_onnx(const GraphView& g, const NamedArrays& params, const std::string& path,
                 const OnnxOptions& opts) {
  const bool external = opts.external_data || parameter_bytes(g, params) > kOnnxExternalAbove;
  const std::string data_path = path + ".data";
  std::string bytes;
  if (external) {
    const std::string location = std::filesystem::path(data_path).filename().string();
    write_checked(data_path + ".tmp", data_path,
                  [&](std::ostream& f) { bytes = build_model(g, params, opts, &f, location); });
  } else {
    bytes = build_model(g, params, opts, nullptr, {});
  }
  write_checked(path + ".tmp", path, [&](std::ostream& f) {
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  if (external) {
    // The checker resolves the data file from the model's folder: put the data in place, check
    // the model file, and take both away if it fails.
    rename_into_place(data_path + ".tmp", data_path);
    if (!opts.attention_op) try {
        onnx::checker::check_model(path + ".tmp");
      } catch (const std::exception& ex) {
        std::remove((path + ".tmp").c_str());
        std::remove(data_path.c_str());
        throw Error(std::string("stag: onnx export: the ONNX checker refused the model: ") +
                    ex.what());
      }
  }
  rename_into_place(path + ".tmp", path);
  // The data file of a model this one replaced, which nothing reads any more.
  if (!external) std::remove(data_path.c_str());
}

}  // namespace stag

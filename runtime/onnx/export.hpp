// ONNX export: a stag inference graph and its weights as an ONNX model (opset 17), for ONNX
// Runtime and every other runtime that reads ONNX. Library stag_onnx (links Debian's
// libonnx-dev and libprotobuf); docs/deployment.md.
//
//   stag::NamedArrays weights = session.params();
//   stag::export_onnx(graph, weights, "model.onnx", {.outputs = {"logits"}});
//
// - Inputs keep their names, dtypes and shapes; a symbolic dim becomes a dim_param with the
//   symbol's name (`batch`, `seq`), so one file serves every batch size and length. Sources
//   whose size is symbolic (positions, causal masks, constants of a symbolic shape, reshapes to
//   `batch * seq`) read that size from the inputs' shapes at run time.
// - Parameters become initializers under their stag names (`enc.0.self_attn.w_q.weight`).
// - Only what the requested outputs need is exported: a classifier's logits need ids and keep,
//   not its labels.
// - Dropout is the identity (an exported graph is for inference); the fused attention becomes
//   the standard-op pattern (MatMul, scale, mask, Softmax, MatMul) with GQA, causal and
//   sliding-window masks, dense keep masks, cache positions, ALiBi and soft-capping;
//   rope becomes its cos/sin tables (angles computed in double, as stag's kernels do).
// - A decode step (models/generate.hpp: lm_decode_graph) exports with its key/value caches as
//   explicit inputs (each state tensor under its name, `layers.0.self_attn.k_cache`, [batch,
//   kv_heads, max_len, head_dim]) and outputs (`present.layers.0.self_attn.k_cache`, the cache
//   after this step's cache_write): the caller feeds each present.* back as the next step's
//   input, so generation runs outside stag. The cache has a fixed length (stag's layout, a
//   "static cache"), not Hugging Face's growing past_key_values; a write past its end, which
//   stag refuses, is not checked by the exported model.
// - Every op has an exporter or a reason it has none (a static_assert in export.cpp names an op
//   without either); onnx_unsupported says which node stops an export and why: gradients and
//   optimizer updates (training graphs), losses, score_mod / mask_mod functions (compiled C++
//   code, not expressible as ONNX ops), bf16 values.
// - The model passes ONNX's checker and shape inference before it is written; a failure is a
//   stag::Error with the checker's message.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <stag/graph/graph_view.hpp>
#include <stag/runtime/bind.hpp>

namespace stag {

struct OnnxOptions {
  // Graph outputs to export, by name ("logits"); "result" is the graph's result (the node the
  // model function returned); a name that is no output may name a node of the graph
  // (`decoder.0.cross_attn.k_memory`, what an encoder computes for the decoder). Empty: every
  // output (a training graph's gradients too, which onnx_unsupported then refuses) and the result
  // when no named output is the same node.
  std::vector<std::string> outputs = {};
  std::string graph_name = "stag";
  // Symbols no input's shape fixes (a dim only a constant or a parameter has): their values,
  // written into the model as numbers. A symbol that is neither is an error naming it.
  std::map<std::string, std::int64_t, std::less<>> dims = {};
  // export_onnx: the weights go to `<path>.data` beside the model as ONNX external data (each
  // tensor at a 4 KiB-aligned offset), which ONNX Runtime reads from the model's folder.
  // export_onnx does this by itself when the parameters pass kOnnxExternalAbove bytes:
  // protobuf cannot write a message over 2 GiB (Qwen2.5-0.5B in f32 is 2 GB).
  bool external_data = false;
  // Opset 23 instead of 17, and the fused attention as ONNX's Attention op where it fits
  // ([batch, heads, seq, head_dim] operands, GQA included, masks as a bool [B|1, H|1, Sq, Sk]
  // input, no ALiBi or soft-capping: those keep the standard-op pattern). Debian's libonnx 1.12
  // knows opset 17 at most, so such a model is not checked by ONNX's checker here; ONNX Runtime
  // (1.30) runs it, and the onnx tests compare its outputs with stag's.
  bool attention_op = false;
};

inline constexpr int kOnnxAttentionOpset = 23;

inline constexpr std::int64_t kOnnxExternalAbove = std::int64_t{1} << 30;  // 1 GiB
inline constexpr std::size_t kOnnxInlineLimit = (std::size_t{2} << 30) - 1;

inline constexpr int kOnnxOpset = 17;

// Why `g` (the part the outputs need) cannot be exported: the first node that stops it, with
// its name, op and the reason; empty when it can.
std::string onnx_unsupported(const GraphView& g, const OnnxOptions& opts = {});

// The names of the graph inputs the exported outputs need: the model's inputs, in graph order.
std::vector<std::string> onnx_inputs(const GraphView& g, const OnnxOptions& opts = {});

// The serialised ONNX ModelProto. `params` holds every parameter the outputs need, under its
// graph name, with the graph's shape (a session's params() or a loaded checkpoint).
std::string onnx_model(const GraphView& g, const NamedArrays& params, const OnnxOptions& opts = {});

// onnx_model written to `path` (through a temporary file renamed into place, so a failed write
// leaves no partial model), with its weights in `<path>.data` when OnnxOptions::external_data
// is set or they pass kOnnxExternalAbove; an inline export removes a `<path>.data` left by the
// model it replaces.
void export_onnx(const GraphView& g, const NamedArrays& params, const std::string& path,
                 const OnnxOptions& opts = {});

}  // namespace stag

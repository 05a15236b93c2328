// ONNX Runtime as the tests' outside reference for the ONNX export: a model file run by
// npm's onnxruntime-node (tests/onnx/ort_run.js) on stag arrays.
#pragma once

#include <string>

#include <stag/runtime/bind.hpp>

namespace th {

// The folder whose node_modules holds onnxruntime-node: STAG_ORT_DIR, else
// <source>/data/npm/onnxruntime (tools/data.sh --only onnxruntime). Empty when it has none.
std::string ort_dir();

// Runs `model` (an .onnx file) in ONNX Runtime on `inputs`; returns every output by name.
// Throws std::runtime_error with ONNX Runtime's message when the runtime refuses the model.
stag::NamedArrays ort_run(const std::string& model, const stag::NamedArrays& inputs,
                          int threads = 1);

}  // namespace th

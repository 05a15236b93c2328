// The three models of the benchmark (issue 4 §6) and their inputs: cls (the articles' text
// classifier), tf (the 6+6 encoder-decoder) and gpt (a decoder-only LM). Each lives in its own
// source file so the three compile-time graphs build in parallel; to add a model, add a file
// that defines one more `BenchModel <name>_model()` and list it in bench.cpp's table.
#pragma once

#include <cstdint>
#include <functional>

#include <stag/runtime/session.hpp>

namespace stag::bench {

struct BenchModel {
  GraphView forward;   // model(...): the loss and the logits, run with training = false
  GraphView train;     // train_step<model, AdamW{}>(): forward, backward and the AdamW update
  NamedArrays inputs;  // what both graphs read (the training step adds "lr" and "step")
  // train_step<model, AdamW{.in_backward = true}>() (cls, tf, gpt): each update right after its
  // gradient (stag-bench --in-backward).
  GraphView train_in_backward = {};
};

BenchModel cls_model();
BenchModel tf_model();
BenchModel gpt_model();
// The same models under stag::autocast (bf16 matmuls, f32 everything else).
BenchModel cls_bf16_model();
BenchModel tf_bf16_model();
BenchModel gpt_bf16_model();
// cls and gpt with the attention chain left unfused (softmax of q k^T): what the GPU backend runs
// until the fused attention op has a CUDA kernel.
BenchModel cls_unfused_model();
BenchModel gpt_unfused_model();

// Deterministic inputs: token ids uniform in [0, vocab) from a fixed-seed generator.
Array random_ids(std::vector<std::int64_t> dims, std::int64_t vocab, std::uint64_t seed);
// A [batch, len] keep mask: true everywhere, except that in every other row (rows 1, 3, ...)
// the last `padded` positions are false.
Array keep_mask(std::int64_t batch, std::int64_t len, std::int64_t padded);

// A plain oneDNN matmul of [n, n] by [n, n] (f32, or bf16 operands with an f32 product),
// outside stag: returns a function that runs it once and waits for it.
std::function<void()> onednn_matmul(std::int64_t n, bool bf16 = false);

}  // namespace stag::bench

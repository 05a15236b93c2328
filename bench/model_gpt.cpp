// gpt: a decoder-only language model, stag's minimind-style LM with plain multi-head attention
// (kv_heads = heads): vocabulary 4096, d_model 256, 8 heads, 4 layers, SwiGLU d_ff 1024,
// pre-norm RMSNorm, rotary positions (theta 1e6), causal, output tied to the embedding, no
// dropout. Batch 16, sequence 128. tools/torch_bench.py builds the same architecture.
#include "bench_models.hpp"

#include <stag/stag.hpp>

namespace stag::bench {
namespace {
constexpr LmConfig kGpt{.vocab = 4096,
                        .d_model = 256,
                        .heads = 8,
                        .kv_heads = 8,
                        .d_ff = 1024,
                        .layers = 4,
                        .dropout = 0.0,
                        .rope_theta = 1e6,
                        .tie_embeddings = true};
constexpr auto gpt_forward = model([](Builder& g) { return language_model<kGpt>(g); });
constexpr auto gpt_train = train_step<gpt_forward, AdamW{}>();
constexpr auto gpt_train_ib = train_step<gpt_forward, AdamW{.in_backward = true}>();
constexpr auto gpt_forward16 = autocast<gpt_forward>();  // bf16 matmuls
constexpr auto gpt_train16 = train_step<gpt_forward16, AdamW{}>();
constexpr auto gpt_forward_unfused = model([](Builder& g) {
  g.fuse_attention = false;
  return language_model<kGpt>(g);
});
constexpr auto gpt_train_unfused = train_step<gpt_forward_unfused, AdamW{}>();
}  // namespace

BenchModel gpt_model() {
  constexpr std::int64_t batch = 16, seq = 128;
  BenchModel m{gpt_forward,
               gpt_train,
               {{"ids", random_ids({batch, seq}, kGpt.vocab, 5)},
                {"targets", random_ids({batch, seq}, kGpt.vocab, 6)}}};
  m.train_in_backward = gpt_train_ib;
  return m;
}

BenchModel gpt_unfused_model() {
  BenchModel m = gpt_model();
  m.forward = gpt_forward_unfused;
  m.train = gpt_train_unfused;
  m.train_in_backward = {};  // f32 and fused only
  return m;
}

BenchModel gpt_bf16_model() {
  BenchModel m = gpt_model();
  m.forward = gpt_forward16;
  m.train = gpt_train16;
  m.train_in_backward = {};  // f32 and fused only
  return m;
}

}  // namespace stag::bench

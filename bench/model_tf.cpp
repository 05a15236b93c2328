// tf: the encoder-decoder of "Attention Is All You Need" in Pre-LN form. d_model 512, 8 heads,
// 6 encoder and 6 decoder layers, d_ff 2048, sinusoidal positions, separate vocabularies of
// 1000 and 1000, dropout 0.1. Batch 8, source 32, target 32, causal decoder mask, no padding.
#include "bench_models.hpp"

#include <stag/stag.hpp>

namespace stag::bench {
namespace {
constexpr TransformerConfig kTf{.src_vocab = 1000,
                                .tgt_vocab = 1000,
                                .shared_vocab = false,
                                .d_model = 512,
                                .heads = 8,
                                .d_ff = 2048,
                                .enc_layers = 6,
                                .dec_layers = 6,
                                .dropout = 0.1,
                                .pre_norm = true};
constexpr auto tf_forward = model([](Builder& g) { return transformer<kTf>(g); });
constexpr auto tf_train = train_step<tf_forward, AdamW{}>();
constexpr auto tf_train_ib = train_step<tf_forward, AdamW{.in_backward = true}>();
constexpr auto tf_forward16 = autocast<tf_forward>();  // bf16 matmuls
constexpr auto tf_train16 = train_step<tf_forward16, AdamW{}>();
}  // namespace

BenchModel tf_model() {
  constexpr std::int64_t batch = 8, src = 32, tgt = 32;
  BenchModel m{tf_forward,
               tf_train,
               {{"src", random_ids({batch, src}, kTf.src_vocab, 2)},
                {"src_keep", keep_mask(batch, src, 0)},
                {"tgt_in", random_ids({batch, tgt}, kTf.tgt_vocab, 3)},
                {"tgt_keep", keep_mask(batch, tgt, 0)},
                {"tgt_out", random_ids({batch, tgt}, kTf.tgt_vocab, 4)}}};
  m.train_in_backward = tf_train_ib;
  return m;
}

BenchModel tf_bf16_model() {
  BenchModel m = tf_model();
  m.forward = tf_forward16;
  m.train = tf_train16;
  m.train_in_backward = {};  // f32 and fused only
  return m;
}

}  // namespace stag::bench

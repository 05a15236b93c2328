// cls: the articles' classifier. Vocabulary 8000, d_model 128, 4 heads, d_ff 512, one Post-LN
// encoder block, learned positions (max 128), masked mean pooling, 2 classes, dropout 0.1.
// Batch 32, sequence 128; in every other row the last 25% of the positions are padding.
#include "bench_models.hpp"

#include <stag/stag.hpp>

namespace stag::bench {
namespace {
constexpr ClassifierConfig kCls{.vocab = 8000,
                                .max_len = 128,
                                .d_model = 128,
                                .heads = 4,
                                .d_ff = 512,
                                .layers = 1,
                                .classes = 2,
                                .dropout = 0.1,
                                .pre_norm = false};
constexpr auto cls_forward = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_train = train_step<cls_forward, AdamW{}>();
constexpr auto cls_train_ib = train_step<cls_forward, AdamW{.in_backward = true}>();
constexpr auto cls_forward16 = autocast<cls_forward>();  // bf16 matmuls
constexpr auto cls_train16 = train_step<cls_forward16, AdamW{}>();
constexpr auto cls_forward_unfused = model([](Builder& g) {
  g.fuse_attention = false;
  return classifier<kCls>(g);
});
constexpr auto cls_train_unfused = train_step<cls_forward_unfused, AdamW{}>();
}  // namespace

BenchModel cls_model() {
  constexpr std::int64_t batch = 32, seq = 128;
  Array label(DType::i32, {batch});
  for (std::int64_t i = 0; i < batch; ++i) label.set(i, static_cast<double>(i % 2));
  BenchModel m{cls_forward,
               cls_train,
               {{"ids", random_ids({batch, seq}, kCls.vocab, 1)},
                {"keep", keep_mask(batch, seq, seq / 4)},
                {"label", label}}};
  m.train_in_backward = cls_train_ib;
  return m;
}

BenchModel cls_unfused_model() {
  BenchModel m = cls_model();
  m.forward = cls_forward_unfused;
  m.train = cls_train_unfused;
  m.train_in_backward = {};  // f32 and fused only
  return m;
}

BenchModel cls_bf16_model() {
  BenchModel m = cls_model();
  m.forward = cls_forward16;
  m.train = cls_train16;
  m.train_in_backward = {};  // f32 and fused only
  return m;
}

}  // namespace stag::bench

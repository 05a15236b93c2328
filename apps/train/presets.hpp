// stag-train's model presets. A stag model's dims are compile-time (they are in the graph's
// types and shape checks), so each preset is one compiled model; run-time settings (learning
// rate, schedule, batch, optimizer settings, seed, ...) are flags. Dropout is a graph attribute
// and so part of the preset. To add a preset: a constexpr config here and one line in the task's
// preset table (classify.cpp, lm.cpp, g2p.cpp); each preset adds its training graph's compile time.
#pragma once

#include <stag/models/classifier.hpp>
#include <stag/models/lm.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/models/transformer.hpp>

namespace stag::train_app {

// The articles' text classifier (ClassifierConfig's defaults): 1 Post-LN encoder layer,
// d_model 128, 4 heads, d_ff 512, learned positions up to 128 tokens, dropout 0.1.
inline constexpr ClassifierConfig kClassifyBase{};
// The same dims as a Pre-LN layer (plus the final LayerNorm) with dropout 0.3: stag-train's
// default, because on the 2,400 training sentences it overfits less (docs/training.md).
inline constexpr ClassifierConfig kClassifyPre{.dropout = 0.3, .pre_norm = true};
// Two such layers: a little better on test, twice the time.
inline constexpr ClassifierConfig kClassifyPre2{.layers = 2, .dropout = 0.3, .pre_norm = true};
// A smaller, faster one for quick runs and tests.
inline constexpr ClassifierConfig kClassifySmall{.vocab = 8000,
                                                 .max_len = 128,
                                                 .d_model = 64,
                                                 .heads = 2,
                                                 .d_ff = 256,
                                                 .layers = 1,
                                                 .classes = 8,
                                                 .dropout = 0.1};

// minimind-style decoder: RMSNorm, GQA with RoPE, SwiGLU, tied embeddings. Declared once in
// models/lm_presets.hpp, so that stag-generate runs the checkpoints stag-train writes.
inline constexpr LmConfig kLmSmall = kLmTrainSmall;
inline constexpr LmConfig kLmSmallBpe = kLmTrainSmallBpe;

// Encoder-decoder Transformer for grapheme-to-phoneme: letters in, phonemes out.
inline constexpr TransformerConfig kG2pSmall{.src_vocab = 64,
                                             .tgt_vocab = 96,
                                             .shared_vocab = false,
                                             .d_model = 128,
                                             .heads = 4,
                                             .d_ff = 512,
                                             .enc_layers = 2,
                                             .dec_layers = 2,
                                             .dropout = 0.1,
                                             .pre_norm = true};

}  // namespace stag::train_app

// The task presets that stag-train trains and that a user's own program can build: a name, a
// compile-time config and a line saying what it is, per task. A stag model's dims are
// compile-time (they are in the graph's types and shape checks), so each preset is one compiled
// model; run-time settings (learning rate, schedule, batch, seed, ...) are not part of it, while
// dropout (a graph attribute) is. To add a preset: a constexpr config and a line in its table;
// stag-train picks it up (each adds its training graph's compile time). The language models'
// presets are in lm_presets.hpp (their decode graphs are compiled in beside them).
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <utility>

#include <stag/models/classifier.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/models/transformer.hpp>

namespace stag {

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
                                             .label_smoothing = 0.1,
                                             .pre_norm = true};
// A larger G2P model (3.2 M parameters against 0.96 M): three layers a side of d_model 192.
inline constexpr TransformerConfig kG2pBase{.src_vocab = 64,
                                            .tgt_vocab = 96,
                                            .shared_vocab = false,
                                            .d_model = 192,
                                            .heads = 4,
                                            .d_ff = 768,
                                            .enc_layers = 3,
                                            .dec_layers = 3,
                                            .dropout = 0.1,
                                            .label_smoothing = 0.1,
                                            .pre_norm = true};
// stag-train seq2seq: characters to characters (a user's tab-separated pairs), up to 252
// distinct characters per side besides the four special ids.
inline constexpr TransformerConfig kTextSeq2SeqSmall{.src_vocab = 256,
                                                     .tgt_vocab = 256,
                                                     .shared_vocab = false,
                                                     .d_model = 128,
                                                     .heads = 4,
                                                     .d_ff = 512,
                                                     .enc_layers = 2,
                                                     .dec_layers = 2,
                                                     .dropout = 0.1,
                                                     .label_smoothing = 0.1,
                                                     .pre_norm = true};

template <class Config>
struct TaskPreset {
  std::string_view name;
  const Config* config = nullptr;
  std::string_view what;
};

// The first line of each table is the task's default.
inline constexpr std::array<TaskPreset<ClassifierConfig>, 4> kClassifierPresets{{
    {"pre", &kClassifyPre, "the default: Pre-LN, dropout 0.3"},
    {"pre2", &kClassifyPre2, "two layers"},
    {"base", &kClassifyBase, "the articles' classifier as configured there"},
    {"small", &kClassifySmall, "8 classes, for langid and zh"},
}};
// stag-train lm's presets: the configs of lm_presets.hpp, so that stag-generate runs them.
inline constexpr std::array<TaskPreset<LmConfig>, 2> kLmTrainPresets{{
    {"small", &kLmTrainSmall, "characters"},
    {"small-bpe", &kLmTrainSmallBpe, "BPE"},
}};
inline constexpr std::array<TaskPreset<TransformerConfig>, 2> kSeq2SeqPresets{{
    {"small", &kG2pSmall, "letters to phonemes (CMUdict)"},
    {"base", &kG2pBase, "letters to phonemes (CMUdict), 3+3 layers of d_model 192"},
}};
inline constexpr std::array<TaskPreset<TransformerConfig>, 1> kTextSeq2SeqPresets{{
    {"small", &kTextSeq2SeqSmall, "characters to characters (tab-separated pairs)"},
}};

// Calls `f.template operator()<*table[i].config>()` for the preset named `name` and returns its
// result; `missing(names)` is called with the list "a, b, c" when there is none. Each preset is
// instantiated once (the compile-time model), so this is how a program picks one at run time.
template <const auto& Table, std::size_t I = 0, class F, class Missing>
decltype(auto) with_preset(std::string_view name, F&& f, Missing&& missing) {
  if constexpr (I < Table.size()) {
    if (name == Table[I].name) return f.template operator()<*Table[I].config>();
    return with_preset<Table, I + 1>(name, std::forward<F>(f), std::forward<Missing>(missing));
  } else {
    std::string names;
    for (const auto& p : Table) names += (names.empty() ? "" : ", ") + std::string(p.name);
    return missing(names);
  }
}

}  // namespace stag

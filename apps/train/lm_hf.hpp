// `stag-train lm --init-hf DIR`: the Hugging Face presets stag-train can fine-tune. A model's
// training graph is compiled into the program that trains it, so each preset here is one
// translation unit (lm_hf_*.cpp: the largest, SmolLM-135M's 30 layers, needs about 1.1 GB of
// compiler memory). A program adds its own sizes with add_hf_trainables before train_main, as the
// tests do with the tiny folders of tests/hf/.
#pragma once

#include <span>
#include <vector>

#include <stag/autodiff/autocast.hpp>
#include <stag/graph/graph_view.hpp>
#include <stag/models/lm.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/runtime/train/trainer.hpp>

namespace stag::train_app {

// The optimizer of every stag-train language model: AdamW whose learning rate, betas and decay
// are inputs, so that the flags set them without recompiling.
inline constexpr AdamW kLmOptimizer{.hparams_as_inputs = true};

// A preset stag-train can fine-tune: its config, its forward graph (counted and drawn) and its
// training graphs (forward, backward, AdamW; f32), and for --precision bf16 those of
// autocast<net>() (bf16 matmuls, f32 weights and sums; nullptr: not compiled in this program).
struct HfTrainable {
  const LmConfig* config = nullptr;
  GraphView net;
  TrainingGraphs (*graphs)() = nullptr;
  TrainingGraphs (*graphs_bf16)() = nullptr;
};

template <const LmConfig& C>
struct HfTrain {
  static constexpr auto net = model([](Builder& g) { return language_model<C>(g); });
  static TrainingGraphs graphs() { return training_graphs<net, kLmOptimizer>(); }
  static HfTrainable entry() { return {&C, net, &graphs}; }
};

// The bf16 graphs of a preset: all of them, or in two parts that two translation units compile
// (a large model's autocast graphs need more compiler memory than one unit may use): the
// forward and the fused step, then grad and update (--accumulation); `join` puts them together.
template <const LmConfig& C>
struct HfTrainBf16 {
  static constexpr auto net = autocast<HfTrain<C>::net>();
  static TrainingGraphs graphs() { return training_graphs<net, kLmOptimizer>(); }
  static TrainingGraphs step_part() { return training_graphs<net, kLmOptimizer, false>(); }
  static TrainingGraphs accumulation_part() {
    TrainingGraphs t;
    t.grad = stag::detail::kGradGraph<net>;
    t.update = stag::detail::kUpdateGraph<net, kLmOptimizer>;
    return t;
  }
};
inline TrainingGraphs join(TrainingGraphs step_part, const TrainingGraphs& accumulation_part) {
  step_part.grad = accumulation_part.grad;
  step_part.update = accumulation_part.update;
  return step_part;
}

// The library's Hugging Face presets (gpt2, smollm-135m, qwen2.5-0.5b, tinyllama-1.1b), each
// defined in its own lm_hf_*.cpp (the library stag_train_hf_presets, which only stag-train links:
// its main adds them; the tests' programs do not compile them).
HfTrainable hf_train_gpt2();
HfTrainable hf_train_smollm_135m();
HfTrainable hf_train_qwen25_05b();
HfTrainable hf_train_tinyllama_11b();
// Their bf16 graphs (lm_hf_*_bf16*.cpp), which main.cpp puts in graphs_bf16.
TrainingGraphs hf_train_gpt2_bf16();
TrainingGraphs hf_train_smollm_135m_bf16();
TrainingGraphs hf_train_qwen25_05b_bf16();
TrainingGraphs hf_train_tinyllama_11b_bf16();

// Adds presets: `presets` (what hf::load matches a config.json against, beyond lm_presets(); they
// must outlive the run) and the training graphs of each (`trainables`, matched by config). None
// is added by default.
void add_hf_trainables(std::span<const LmPreset> presets, std::span<const HfTrainable> trainables);
// lm_presets() followed by the added ones.
std::vector<LmPreset> hf_presets_for_training();
// The trainable entry for this config, or nullptr.
const HfTrainable* find_hf_trainable(const LmConfig& c);

}  // namespace stag::train_app

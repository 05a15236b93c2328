// The table of Hugging Face presets stag-train fine-tunes (lm_hf.hpp).
#include "lm_hf.hpp"

#include <utility>

namespace stag::train_app {
namespace {

struct Added {
  std::vector<LmPreset> presets;
  std::vector<HfTrainable> trainables;
};

Added& added() {
  static Added a;
  return a;
}

const std::vector<HfTrainable>& library_trainables() {
  static const std::vector<HfTrainable> t = {hf_train_gpt2(), hf_train_smollm_135m(),
                                             hf_train_qwen25_05b(), hf_train_tinyllama_11b()};
  return t;
}

}  // namespace

void add_hf_trainables(std::span<const LmPreset> presets, std::span<const HfTrainable> trainables) {
  added().presets.insert(added().presets.end(), presets.begin(), presets.end());
  added().trainables.insert(added().trainables.end(), trainables.begin(), trainables.end());
}

std::vector<LmPreset> hf_presets_for_training() {
  std::vector<LmPreset> all(lm_presets().begin(), lm_presets().end());
  all.insert(all.end(), added().presets.begin(), added().presets.end());
  return all;
}

const HfTrainable* find_hf_trainable(const LmConfig& c) {
  for (const std::vector<HfTrainable>* list :
       {&library_trainables(), &std::as_const(added().trainables)})
    for (const HfTrainable& t : *list)
      if (t.config == &c) return &t;
  return nullptr;
}

}  // namespace stag::train_app

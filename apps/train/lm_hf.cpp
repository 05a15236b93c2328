// The table of Hugging Face presets stag-train fine-tunes (lm_hf.hpp).
#include "lm_hf.hpp"

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
  for (const HfTrainable& t : added().trainables)
    if (t.config == &c) return &t;
  return nullptr;
}

}  // namespace stag::train_app

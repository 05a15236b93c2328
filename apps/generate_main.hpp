// stag-generate as a function (apps/stag_generate.cpp): a program that compiles its own model
// sizes (LmPresets) passes them, and its checkpoints and Hugging Face folders of those sizes run
// as the library's presets do (the tests' stag_generate_hf_fixtures adds the tiny folders of
// tests/hf/, as stag_train_hf_fixtures does for stag-train).
#pragma once

#include <span>

#include <stag/models/lm_presets.hpp>

namespace stag {

int generate_main(int argc, char** argv, std::span<const LmPreset> extra_presets = {});

}  // namespace stag

// stag_generate_hf_fixtures: stag-generate with the presets of the tiny Hugging Face folders of
// tests/hf/ added (tests/hf_presets.hpp), so that the tests run those folders, and checkpoints
// fine-tuned from them by stag_train_hf_fixtures, from the command line as a user runs a real
// model.
#include "generate_main.hpp"
#include "hf_presets.hpp"

int main(int argc, char** argv) {
  return stag::generate_main(argc, argv, th::kTinyPresets);
}

// stag_train_hf_fixtures: stag-train with the presets of the tiny Hugging Face folders of
// tests/hf/ added (tests/hf_presets.hpp), so that the tests fine-tune them from the command line
// as a user fine-tunes a real model. A program adds its own sizes the same way.
#include "hf_presets.hpp"
#include "lm_hf.hpp"
#include "tasks.hpp"

int main(int argc, char** argv) {
  using namespace stag::train_app;
  // tiny-llama also in bf16 (--precision bf16); tiny-gpt2 in f32 only, as a program that does
  // not compile a preset's bf16 graphs.
  HfTrainable tiny[] = {HfTrain<th::kTinyLlama>::entry(), HfTrain<th::kTinyQwen2>::entry(),
                        HfTrain<th::kTinyGpt2>::entry()};
  tiny[0].graphs_bf16 = &HfTrainBf16<th::kTinyLlama>::graphs;
  add_hf_trainables(th::kTinyPresets, tiny);
  return train_main(argc, argv);
}

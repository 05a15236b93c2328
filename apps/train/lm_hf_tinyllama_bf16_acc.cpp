// The bf16 graphs of the TinyLlama-1.1B preset for --accumulation (grad and update;
// lm_hf_tinyllama_bf16.cpp has the others).
#include "lm_hf.hpp"

namespace stag::train_app {

TrainingGraphs hf_train_tinyllama_11b_bf16_accumulation() {
  return HfTrainBf16<kLmTinyLlama11B>::accumulation_part();
}

}  // namespace stag::train_app

// The bf16 graphs of the Qwen2.5-0.5B preset for --accumulation (grad and update;
// lm_hf_qwen25_bf16.cpp has the others).
#include "lm_hf.hpp"

namespace stag::train_app {

TrainingGraphs hf_train_qwen25_05b_bf16_accumulation() {
  return HfTrainBf16<kLmQwen25_05B>::accumulation_part();
}

}  // namespace stag::train_app

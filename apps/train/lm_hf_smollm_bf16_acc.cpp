// The bf16 graphs of the SmolLM-135M preset for --accumulation (grad and update;
// lm_hf_smollm_bf16.cpp has the others).
#include "lm_hf.hpp"

namespace stag::train_app {

TrainingGraphs hf_train_smollm_135m_bf16_accumulation() {
  return HfTrainBf16<kLmSmolLm135M>::accumulation_part();
}

}  // namespace stag::train_app

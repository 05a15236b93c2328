// The training graphs of the GPT-2 (124 M) preset for `stag-train lm --init-hf` (lm_hf.hpp: one
// translation unit per preset, to keep each compile's memory bounded).
#include "lm_hf.hpp"

namespace stag::train_app {

HfTrainable hf_train_gpt2() {
  return HfTrain<kLmGpt2_124M>::entry();
}

}  // namespace stag::train_app

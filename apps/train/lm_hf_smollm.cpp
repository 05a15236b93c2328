// The training graphs of the SmolLM-135M preset for `stag-train lm --init-hf` (lm_hf.hpp: one
// translation unit per preset, to keep each compile's memory bounded).
#include "lm_hf.hpp"

namespace stag::train_app {

HfTrainable hf_train_smollm_135m() {
  return HfTrain<kLmSmolLm135M>::entry();
}

}  // namespace stag::train_app

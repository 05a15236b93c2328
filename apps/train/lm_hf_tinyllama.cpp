// The training graphs of the TinyLlama-1.1B preset for `stag-train lm --init-hf` (lm_hf.hpp: one
// translation unit per preset, to keep each compile's memory bounded).
#include "lm_hf.hpp"

namespace stag::train_app {

HfTrainable hf_train_tinyllama_11b() {
  return HfTrain<kLmTinyLlama11B>::entry();
}

}  // namespace stag::train_app

// The training graphs of the Qwen2.5-0.5B preset for `stag-train lm --init-hf` (lm_hf.hpp: one
// translation unit per preset, to keep each compile's memory bounded).
#include "lm_hf.hpp"

namespace stag::train_app {

HfTrainable hf_train_qwen25_05b() {
  return HfTrain<kLmQwen25_05B>::entry();
}

}  // namespace stag::train_app

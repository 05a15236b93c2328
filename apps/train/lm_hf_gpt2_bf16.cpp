// The bf16 training graphs (--precision bf16) of the GPT-2 (124 M) preset for `stag-train lm
// --init-hf` (lm_hf.hpp; about 0.8 GB of g++'s memory, one translation unit).
#include "lm_hf.hpp"

namespace stag::train_app {

TrainingGraphs hf_train_gpt2_bf16() {
  return HfTrainBf16<kLmGpt2_124M>::graphs();
}

}  // namespace stag::train_app

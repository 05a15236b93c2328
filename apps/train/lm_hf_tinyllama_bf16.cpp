// The bf16 training graphs (--precision bf16) of the TinyLlama-1.1B preset for `stag-train lm
// --init-hf` (lm_hf.hpp): the forward and the fused step here, grad and update in
// lm_hf_tinyllama_bf16_acc.cpp (all of them in one unit would need more than 1 GB of g++'s memory).
#include "lm_hf.hpp"

namespace stag::train_app {

TrainingGraphs hf_train_tinyllama_11b_bf16_accumulation();  // lm_hf_tinyllama_bf16_acc.cpp

TrainingGraphs hf_train_tinyllama_11b_bf16() {
  return join(HfTrainBf16<kLmTinyLlama11B>::step_part(),
              hf_train_tinyllama_11b_bf16_accumulation());
}

}  // namespace stag::train_app

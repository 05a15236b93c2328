// stag-train: trains stag's models on real data from the command line (cli.cpp).
//   stag-train [classify] [flags]   the articles' text classifier (default: sentiment sentences)
//   stag-train lm [flags]           a minimind-style language model (fortunes, characters or BPE),
//                                   or a Hugging Face model fine-tuned (--init-hf DIR --data F)
//   stag-train g2p [flags]          an encoder-decoder Transformer from letters to phonemes
//   stag-train seq2seq --data F.tsv the same model on a user's source<TAB>target pairs
#include "lm_hf.hpp"
#include "tasks.hpp"

int main(int argc, char** argv) {
  using namespace stag::train_app;
  // The Hugging Face presets --init-hf fine-tunes (their decode graphs are lm_presets()'), in
  // f32 and bf16.
  HfTrainable hf[] = {hf_train_gpt2(), hf_train_smollm_135m(), hf_train_qwen25_05b(),
                      hf_train_tinyllama_11b()};
  hf[0].graphs_bf16 = &hf_train_gpt2_bf16;
  hf[1].graphs_bf16 = &hf_train_smollm_135m_bf16;
  hf[2].graphs_bf16 = &hf_train_qwen25_05b_bf16;
  hf[3].graphs_bf16 = &hf_train_tinyllama_11b_bf16;
  add_hf_trainables({}, hf);
  return train_main(argc, argv);
}

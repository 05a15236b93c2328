// stag-train: trains stag's models on real data from the command line (cli.cpp).
//   stag-train [classify] [flags]   the articles' text classifier (default: sentiment sentences)
//   stag-train lm [flags]           a minimind-style language model (fortunes, characters or BPE),
//                                   or a Hugging Face model fine-tuned (--init-hf DIR --data F)
//   stag-train g2p [flags]          an encoder-decoder Transformer from letters to phonemes
//   stag-train seq2seq --data F.tsv the same model on a user's source<TAB>target pairs
#include "tasks.hpp"

int main(int argc, char** argv) {
  return stag::train_app::train_main(argc, argv);
}

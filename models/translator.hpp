// Running a trained encoder-decoder checkpoint on text: loads what `stag-train g2p` or
// `stag-train seq2seq` saved (the weights of transformer<C> for a compiled preset of
// models/presets.hpp, named in the checkpoint's "stag.config", with the tokenizers in it), and
// turns lines of text into the model's outputs with greedy or beam search over cached decode
// steps (Seq2SeqGenerator). g2p reads a word (lower-cased, as CMUdict's words were) and writes
// phonemes separated by spaces; seq2seq reads and writes characters.
//
//   Translator t("runs/g2p/model.safetensors");
//   auto out = t.translate({"stag", "graph"}, {.search = {.beam_size = 4, .n_best = 2}});
//   // out[0][0].text == "S T AE G"
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <stag/models/seq2seq_generator.hpp>

namespace stag {

struct TranslatorOptions {
  int threads = 0;               // 0: every core
  bool allow_nonfinite = false;  // load a checkpoint with NaN/Inf weights anyway
  std::size_t batch_rows = 64;   // lines searched together
  Device device = Device::cpu;   // where the encoder and decode steps run
};

struct Translation {
  std::string text;
  std::vector<std::int32_t> ids;
  double log_prob = 0.0, score = 0.0;
  bool finished = false;  // ended with <eos> (not cut at max_new)
};

class Translator {
 public:
  // stag::Error when the file is not such a checkpoint (another task, a preset this program
  // does not have, a different model, missing tensors or tokenizers), naming what is wrong.
  explicit Translator(const std::string& checkpoint, TranslatorOptions options = {});
  ~Translator();

  // One list of n-best outputs per line, best first. An empty line (or one with no character
  // the model knows) gives an empty list, not an error; `options.max_new` 0 means
  // 2 * the line's length + 10 ids.
  std::vector<std::vector<Translation>> translate(const std::vector<std::string>& lines,
                                                  const Seq2SeqGenerateOptions& options = {});

  // The task a stag-train checkpoint was trained for ("lm", "g2p", "seq2seq", ...; "" when its
  // stag.config names none), from its header only.
  static std::string task_of(const std::string& checkpoint);

  const std::string& task() const { return task_; }      // "g2p" or "seq2seq"
  const std::string& preset() const { return preset_; }  // the compiled preset's name

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string task_, preset_;
};

}  // namespace stag

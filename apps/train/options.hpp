// stag-train's run-time settings: Hana-reflected structs, so that every field becomes a CLI
// flag (--batch-size for batch_size), a line of the printed settings and a key of the JSON stored
// in checkpoints, without a list of names to keep in step. To add a setting: add a member to one
// of the two parts and a help line in options.cpp; task-specific defaults go in defaults_for().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <boost/hana/define_struct.hpp>

#include "reflect.hpp"

namespace stag::train_app {

enum class Task { classify, lm, g2p, seq2seq };

// Hana reflects at most 39 members per struct, so the settings come in two reflected parts;
// RunOptions has both (for_each_field below visits them in order).
struct ModelOptions {
  BOOST_HANA_DEFINE_STRUCT(
      ModelOptions,
      // What to train.
      (std::string,
       data),  // classify: sentiment, spam, langid, zh; lm: fortunes, pydoc, a text file; g2p:
               // cmudict
      (std::string, model),       // a compiled preset (see --list-models)
      (std::string, tokenizer),   // char or bpe
      (std::int64_t, bpe_vocab),  // merges learnt until the vocabulary has this many ids
      (bool, lowercase),          // classify: lower-case ASCII letters before tokenising
      (std::int64_t, max_len),    // tokens per example (longer ones are cut); the LM's window
      (std::int64_t, limit),  // use only the first N training examples (0: all), for smoke tests
      // How long and how.
      (std::int64_t, epochs), (std::int64_t, max_steps),  // 0: epochs decide
      (double, max_seconds),  // stop (evaluate, save) after this long; 0: no limit
      (std::int64_t, batch_size),
      (std::int64_t, accumulation),  // micro-batches of batch_size per optimizer step
      (double, lr),                  // peak learning rate
      (std::string, lr_schedule),    // constant, linear, cosine, inverse_sqrt
      (std::int64_t, warmup),        // steps of linear warmup
      (double, min_lr),              // floor of linear and cosine
      (double, beta1), (double, beta2), (double, eps), (double, weight_decay),
      (double, clip_norm),  // <= 0: no clipping
      (std::uint64_t, seed), (int, threads),
      (std::string, device),        // cpu, cuda, cuda_interpret: where the training steps run
      (std::string, precision),     // f32, or bf16: the matmuls under stag::autocast
      (double, memory_budget_mib),  // the training step's arena limit (0: none)
      (bool, bucket),               // batch texts of similar length together
      (double, token_dropout),      // classify: drop each training token with this probability
      (bool, alternates),  // g2p: train on every pronunciation of a word, not only its first
      // classify: masked-LM pretraining of the encoder on unlabelled text first.
      (std::int64_t, pretrain_steps),  // 0: none
      (double, pretrain_lr),
      (std::string, init_from),  // start from this pretrained checkpoint's encoder
      (std::string, init_hf)     // lm: fine-tune this Hugging Face model folder
  );
};

struct OutputOptions {
  BOOST_HANA_DEFINE_STRUCT(
      OutputOptions,
      // Evaluation, files.
      (std::int64_t, eval_every),        // steps (0: every epoch)
      (std::int64_t, eval_limit),        // evaluate on at most N examples per split (0: all)
      (std::int64_t, test_limit),        // final val/test evaluation on at most N examples (0: all)
      (std::int64_t, checkpoint_every),  // steps (0: only at the end)
      (std::int64_t, beam),              // g2p, seq2seq: beam width of the test decoding
      (double, length_penalty),          // beam hypotheses rank by log p / length^this
      (bool, keep_best),                 // keep <out>/best.safetensors and report its metrics
      (std::string, out),                // the run's folder (checkpoint, metrics, tokenizer)
      (std::string, save),               // the checkpoint path (default: <out>/model.safetensors)
      (std::string, resume),             // continue from this checkpoint
      (bool, eval_only),                 // evaluate the checkpoint (--resume or --save path) only
      (std::string, metrics),            // JSON lines (default: <out>/metrics.jsonl)
      (std::string, progress),           // auto, terminal, plain, off
      (bool, force),                     // run even if another run holds --out's lock
      (bool, allow_nonfinite),           // load checkpoints with NaN/Inf values anyway
      (std::string, export_data),  // classify: write the tokenised splits as JSON (for tools/)
      (std::string,
       dump_logits),  // classify: write 16 validation texts' logits as JSON (for tools/)
      (std::string, export_bf16),  // also write the final weights as bf16 here (no optimizer state)
      (std::string, export_hf),    // lm --init-hf: write the fine-tuned model as a HF folder here
      (std::string, trace),        // a Chrome trace-event timeline of the first training steps
      (bool, fail_at_chance)       // exit with an error when the model does no better than chance
  );
};

struct RunOptions : ModelOptions, OutputOptions {};

// The fields of both parts, for reflect.hpp's to_json, from_json and add_flags.
template <class F>
void for_each_field(RunOptions& s, F&& f) {
  for_each_field(static_cast<ModelOptions&>(s), f);
  for_each_field(static_cast<OutputOptions&>(s), f);
}
template <class F>
void for_each_field(const RunOptions& s, F&& f) {
  for_each_field(static_cast<const ModelOptions&>(s), f);
  for_each_field(static_cast<const OutputOptions&>(s), f);
}

RunOptions defaults_for(Task task);
// The help text of a field, by name.
const char* help_for(const std::string& field);
// Checks values and combinations; stag::Error naming the flag.
void validate(const RunOptions& o, Task task);

const char* task_name(Task t);

// Whether stag-train compiles the bf16 training graphs of this task's preset (each task's
// graphs_for<..., Bf16>): classify's pre, lm's small and g2p's small. lm --init-hf's presets say
// it themselves (HfTrainable::graphs_bf16).
bool compiles_bf16(Task task, std::string_view model);
// Those presets in words: "classify's 'pre', lm's 'small' and g2p's 'small'".
std::string bf16_presets_text();
// --precision auto: bf16 where the CPU multiplies bf16 natively (`native_bf16`: AVX512-BF16,
// which CPUs with AMX also have) and the run's graphs have a bf16 form (`compiled`), else f32.
// f32 and bf16 stay as asked.
std::string resolve_precision(const std::string& asked, bool native_bf16, bool compiled);

}  // namespace stag::train_app

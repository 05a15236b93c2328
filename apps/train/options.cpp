// stag-train's defaults per task (measured to fit the time budgets in docs/training.md), the
// help text of each flag, and the checks of their values.
#include <cmath>
#include <filesystem>
#include <map>

#include <stag/ops/kernel.hpp>

#include "options.hpp"

namespace stag::train_app {

namespace {
struct Bf16Preset {
  Task task;
  std::string_view model;
};
// Those whose task compiles graphs_for<..., Bf16 = true>: classify.cpp, lm.cpp, and every preset
// of g2p and seq2seq (Seq2SeqTask in g2p.cpp).
constexpr Bf16Preset kBf16Presets[] = {{Task::classify, "pre"},
                                       {Task::lm, "small"},
                                       {Task::g2p, "small"},
                                       {Task::g2p, "base"},
                                       {Task::seq2seq, "small"}};
}  // namespace

bool compiles_bf16(Task task, std::string_view model) {
  for (const Bf16Preset& p : kBf16Presets)
    if (p.task == task && p.model == model) return true;
  return false;
}

std::string bf16_presets_text() {
  // "classify's 'pre'; ...; g2p's 'small' and 'base'; seq2seq's 'small'"
  std::string t;
  const std::size_t n = std::size(kBf16Presets);
  for (std::size_t i = 0; i < n; ++i) {
    const bool first_of_task = i == 0 || kBf16Presets[i - 1].task != kBf16Presets[i].task;
    const bool last_of_task = i + 1 == n || kBf16Presets[i + 1].task != kBf16Presets[i].task;
    if (first_of_task)
      t += (i == 0 ? "" : "; ") + std::string(task_name(kBf16Presets[i].task)) + "'s ";
    else
      t += last_of_task ? " and " : ", ";
    t += "'" + std::string(kBf16Presets[i].model) + "'";
  }
  return t;
}

std::string resolve_precision(const std::string& asked, bool native_bf16, bool compiled) {
  if (asked != "auto") return asked;
  return native_bf16 && compiled ? "bf16" : "f32";
}

const char* task_name(Task t) {
  switch (t) {
    case Task::classify:
      return "classify";
    case Task::lm:
      return "lm";
    case Task::g2p:
      return "g2p";
    case Task::seq2seq:
      return "seq2seq";
  }
  return "?";
}

RunOptions defaults_for(Task task) {
  RunOptions o;
  o.tokenizer = "bpe";
  o.bpe_vocab = 2000;
  o.lowercase = task == Task::classify;
  o.limit = 0;
  o.max_steps = 0;
  o.max_seconds = 0;
  o.accumulation = 1;
  o.lr_schedule = "cosine";
  o.precision = "f32";
  o.device = "cpu";
  o.memory_budget_mib = 0;
  o.min_lr = 0;
  o.beta1 = 0.9;
  o.beta2 = 0.999;
  o.eps = 1e-8;
  o.weight_decay = 0.01;
  o.clip_norm = 1.0;
  o.seed = 1;
  o.threads = 2;
  o.bucket = true;
  o.token_dropout = 0;
  o.alternates = false;
  o.pretrain_steps = 0;
  o.pretrain_lr = 1e-3;
  o.eval_every = 0;
  o.eval_limit = 0;
  o.test_limit = 0;
  o.checkpoint_every = 0;
  o.beam = task == Task::g2p || task == Task::seq2seq ? 4 : 1;
  o.length_penalty = 1.0;
  o.keep_best = task == Task::classify;
  o.eval_only = false;
  o.progress = "auto";
  o.force = false;
  o.allow_nonfinite = false;
  o.fail_at_chance = false;
  o.init_hf = "";
  o.export_hf = "";
  o.trace = "";
  o.out = std::string("runs/") + task_name(task);
  switch (task) {
    case Task::classify:
      o.data = "sentiment";
      o.model = "pre";
      o.max_len = 64;
      o.epochs = 20;
      o.batch_size = 32;
      o.lr = 1e-3;
      o.warmup = 50;
      o.weight_decay = 0.1;
      break;
    case Task::lm:
      o.data = "fortunes";
      o.model = "small";
      o.tokenizer = "char";
      o.max_len = 128;
      o.epochs = 1;
      o.max_steps = 1500;
      o.batch_size = 32;
      o.lr = 2e-3;
      o.warmup = 100;
      o.weight_decay = 0.1;
      o.bucket = false;
      o.eval_every = 500;
      o.eval_limit = 2000;
      break;
    case Task::g2p:
      o.data = "cmudict";
      o.model = "small";
      o.tokenizer = "char";
      o.max_len = 24;
      o.epochs = 8;
      o.batch_size = 128;
      o.lr = 2e-3;
      o.warmup = 200;
      o.weight_decay = 0.01;
      o.eval_limit = 2000;
      break;
    case Task::seq2seq:
      o.data = "";  // the user's file
      o.model = "small";
      o.tokenizer = "char";
      o.max_len = 64;
      o.epochs = 20;
      o.batch_size = 64;
      o.lr = 2e-3;
      o.warmup = 200;
      o.weight_decay = 0.01;
      o.eval_limit = 1000;
      break;
  }
  return o;
}

const char* help_for(const std::string& field) {
  static const std::map<std::string, const char*> help = {
      {"data",
       "Data set: classify: sentiment, spam, langid, zh; lm: fortunes, pydoc; g2p: cmudict; "
       "seq2seq: a tab-separated file of source<TAB>target lines, or gettext catalogues (a .mo "
       "file or a folder of them)"},
      {"model", "Compiled model preset (dims are compile-time in stag; --list-models shows them)"},
      {"tokenizer",
       "char (one id per character), bpe (byte-level BPE learnt on the training split) or, for "
       "classify, word (lower-cased words, as the baseline sees them)"},
      {"bpe_vocab", "BPE vocabulary size (ids), at most the preset's vocab"},
      {"lowercase",
       "classify: lower-case ASCII letters and start every text with a space before tokenising (a "
       "word is then one token wherever it stands)"},
      {"max_len", "Tokens per example (longer ones are cut); the LM's window length"},
      {"limit", "Use only the first N training examples (0: all): smoke tests"},
      {"epochs", "Passes over the training split"},
      {"max_steps",
       "Train for this many optimizer steps, however many epochs that takes (0: --epochs decides)"},
      {"max_seconds",
       "Stop after this many seconds of training (then evaluate and save as at the end); the "
       "linear and cosine schedules are shortened to the steps that fit, measured over the first "
       "20 steps (0: no limit)"},
      {"batch_size", "Examples (LM: windows) per micro-batch"},
      {"accumulation", "Micro-batches per optimizer step (gradient accumulation)"},
      {"lr", "Peak learning rate"},
      {"lr_schedule", "Learning-rate schedule: constant, linear, cosine, inverse_sqrt"},
      {"warmup", "Steps of linear warmup"},
      {"min_lr", "Final learning rate of the linear and cosine schedules"},
      {"beta1", "AdamW beta1"},
      {"beta2", "AdamW beta2"},
      {"eps", "AdamW epsilon"},
      {"weight_decay", "AdamW decoupled weight decay (not on biases and norm gains)"},
      {"clip_norm", "Clip gradients to this global norm (<= 0: off)"},
      {"seed", "Seed of initialisation, dropout, splits' shuffles and batch order"},
      {"threads", "CPU threads (0: all cores)"},
      {"device",
       "Where the training and evaluation steps run: cpu, cuda (the GPU backend: parameters and "
       "optimizer state stay on the GPU; checkpoints are the CPU's), or cuda_interpret (the same "
       "CUDA kernels run on the CPU, slowly: for checking without a GPU)"},
      {"precision",
       "f32, or bf16: every matmul reads bf16 operands and accumulates in f32 (stag::autocast; "
       "norms, softmax, losses, the optimizer and the checkpoint stay f32); compiled for the "
       "presets classify pre, lm small, every g2p preset and seq2seq small, and lm --init-hf's; "
       "or auto: bf16 where the CPU multiplies bf16 natively (AVX512-BF16, AMX) and the preset "
       "has it, else f32 (what ./run.sh g2p and lm pass)"},
      {"memory_budget_mib",
       "Keep the training step's arena (activations, gradients, temporaries; not the weights or "
       "optimizer state) within this many MiB by computing some forward values again in the "
       "backward pass, with the same results (0: no limit)"},
      {"bucket", "Batch examples of similar length together (less padding)"},
      {"token_dropout",
       "classify: leave each training token out with this probability, anew each epoch (word "
       "dropout, as in deep averaging networks); never the last one of a text"},
      {"alternates",
       "g2p: train on every pronunciation CMUdict gives a word (8,711 second or later ones), "
       "not only its first. Either way the results score each word against its first "
       "pronunciation (test_per, test_wer) and against all of them, right when it matches any "
       "(test_per_any, test_wer_any)"},
      {"pretrain_steps",
       "classify: first pretrain the encoder for this many steps as a masked language model "
       "(BERT's objective: 15% of the tokens predicted) on unlabelled English, the fortunes "
       "and the training split's texts without their labels; then train the classifier from it "
       "(0: no pretraining)"},
      {"pretrain_lr", "classify: peak learning rate of the pretraining (cosine, --warmup steps)"},
      {"init_from",
       "classify: start from the encoder of this pretraining checkpoint "
       "(<out>/pretrain.safetensors "
       "of an earlier run with the same preset; its tokenizer is used) instead of pretraining"},
      {"init_hf",
       "lm: fine-tune the Hugging Face model in this folder (config.json, safetensors weights, "
       "tokenizer.json or vocab.json + merges.txt) on --data with its own tokenizer; the "
       "architecture is the compiled preset its config.json equals (--list-models), not --model"},
      {"eval_every", "Evaluate on the validation split every N steps (0: every epoch)"},
      {"eval_limit",
       "Evaluate on at most N examples (LM: windows) per split during training (0: all)"},
      {"test_limit",
       "Final evaluation on at most N examples (LM: windows) of the validation and test splits (0: "
       "all, as reported in docs/training.md): smoke tests"},
      {"checkpoint_every", "Save a checkpoint every N steps (0: only at the end)"},
      {"beam",
       "g2p, seq2seq: beam width of the final decoding of the validation and test words (1: "
       "greedy; "
       "cached decode steps either way)"},
      {"length_penalty",
       "g2p, seq2seq: beam hypotheses rank by log-probability / length^this (0: the plain sum, "
       "which "
       "favours short outputs; 1: the mean per token)"},
      {"out", "The run's folder: checkpoint, metrics, tokenizer"},
      {"keep_best",
       "Keep the weights of the best validation evaluation in <out>/best.safetensors and report "
       "the final metrics with them (early stopping)"},
      {"save", "Checkpoint path (default: <out>/model.safetensors)"},
      {"resume", "Continue training from this checkpoint (same seed and settings)"},
      {"eval_only",
       "Only evaluate a checkpoint: --resume PATH, else --save PATH, else <out>/model.safetensors"},
      {"metrics", "Metrics log, JSON lines (default: <out>/metrics.jsonl)"},
      {"progress", "Progress line: auto, terminal, plain, off"},
      {"force",
       "Run even when another run holds the lock of --out (the two would overwrite each other's "
       "checkpoints)"},
      {"allow_nonfinite",
       "Load a checkpoint even if a tensor holds NaN or infinite values (to inspect a diverged "
       "run)"},
      {"export_data",
       "classify: also write the tokenised train/val/test splits to this JSON file "
       "(tools/torch_classifier.py reads it); g2p: the split's words and pronunciations "
       "(tools/torch_g2p.py reads it)"},
      {"dump_logits",
       "classify: after training, write the logits of the first 16 validation texts to this JSON "
       "file (tools/torch_classifier.py check)"},
      {"export_bf16",
       "Also write the final weights (those reported) as bf16 to this safetensors file: half the "
       "size, no optimizer state; --eval-only --resume and --init-from read it"},
      {"export_hf",
       "lm --init-hf: also write the fine-tuned model (the weights reported) as a Hugging Face "
       "folder here: config.json, model.safetensors under transformers' names (BF16 when the "
       "source said bfloat16, else F32) and the tokenizer; with --eval-only --resume CKPT, "
       "that checkpoint's weights"},
      {"trace",
       "Write a Chrome trace-event timeline (open it in Perfetto or chrome://tracing) of the "
       "first 20 runs of the training step's graphs to this JSON file: one lane per worker "
       "thread, every node with its op, shape, bytes, estimated GFLOP/s and kernel. It is "
       "rewritten after each traced run; those steps run their nodes one by one and a little "
       "slower"},
      {"fail_at_chance",
       "Exit with an error (status 3) when the trained model does no better than chance on the "
       "test split: classify's accuracy within 2 points of the majority class's, lm's bits per "
       "character not below the unigram model's, g2p's and seq2seq's error rates not below 1 "
       "(an empty output's). ./run.sh sets it"},
  };
  const auto it = help.find(field);
  return it == help.end() ? "" : it->second;
}

void validate(const RunOptions& o, Task task) {
  auto fail = [](const std::string& flag, const std::string& what) {
    throw Error("stag-train: --" + flag + ": " + what);
  };
  auto one_of = [&](const std::string& flag, const std::string& v,
                    std::initializer_list<const char*> allowed) {
    std::string list;
    for (const char* a : allowed) {
      if (v == a) return;
      list += std::string(list.empty() ? "" : ", ") + a;
    }
    fail(flag, "'" + v + "' is not one of " + list);
  };
  switch (task) {
    case Task::classify:
      one_of("data", o.data, {"sentiment", "spam", "langid", "zh"});
      break;
    case Task::lm:
      // fortunes, pydoc, or a text file of the user's (lm.cpp reads it; a name that is neither
      // is reported there as a missing file).
      if (o.data.empty()) fail("data", "give fortunes, pydoc or a text file");
      break;
    case Task::g2p:
      one_of("data", o.data, {"cmudict"});
      break;
    case Task::seq2seq:
      if (o.data.empty())
        fail("data",
             "give the tab-separated source<TAB>target file to learn (--data FILE.tsv), or "
             "gettext catalogues (--data /usr/share/locale/de/LC_MESSAGES)");
      if (o.tokenizer != "char") fail("tokenizer", "seq2seq reads characters (char) only");
      break;
  }
  if (task == Task::classify)
    one_of("tokenizer", o.tokenizer, {"char", "bpe", "word"});
  else
    one_of("tokenizer", o.tokenizer, {"char", "bpe"});
  one_of("lr-schedule", o.lr_schedule, {"constant", "linear", "cosine", "inverse_sqrt"});
  one_of("progress", o.progress, {"auto", "terminal", "plain", "off"});
  one_of("precision", o.precision, {"f32", "bf16", "auto"});
  one_of("device", o.device, {"cpu", "cuda", "cuda_interpret"});
  if (o.max_len < 2) fail("max-len", "must be at least 2");
  if (o.batch_size < 1) fail("batch-size", "must be positive");
  if (o.accumulation < 1) fail("accumulation", "must be positive");
  if (o.max_steps < 0)
    fail("max-steps",
         std::to_string(o.max_steps) + " is negative; give a positive count (0: --epochs decides)");
  if (o.epochs < 1 && o.max_steps < 1) fail("epochs", "must be positive (or give --max-steps)");
  if (!(o.max_seconds >= 0)) fail("max-seconds", "must not be negative (0: no time limit)");
  if (o.checkpoint_every < 0)
    fail("checkpoint-every", std::to_string(o.checkpoint_every) +
                                 " is negative; give a step count (0: only at the end)");
  if (o.eval_every < 0)
    fail("eval-every",
         std::to_string(o.eval_every) + " is negative; give a step count (0: every epoch)");
  if (!(o.lr > 0)) fail("lr", "must be positive");
  if (o.warmup < 0) fail("warmup", "must not be negative");
  if (o.min_lr < 0 || o.min_lr > o.lr) fail("min-lr", "must be between 0 and --lr");
  if (!(o.beta1 >= 0 && o.beta1 < 1)) fail("beta1", "must be in [0, 1)");
  if (!(o.beta2 >= 0 && o.beta2 < 1)) fail("beta2", "must be in [0, 1)");
  if (!(o.eps > 0)) fail("eps", "must be positive");
  if (o.weight_decay < 0) fail("weight-decay", "must not be negative");
  if (o.threads < 0) fail("threads", "must not be negative");
  if (o.memory_budget_mib < 0) fail("memory_budget_mib", "must not be negative");
  if (!(o.token_dropout >= 0 && o.token_dropout < 1)) fail("token-dropout", "must be in [0, 1)");
  if (o.limit < 0 || o.eval_limit < 0 || o.test_limit < 0) fail("limit", "must not be negative");
  if (o.alternates && task != Task::g2p) fail("alternates", "only g2p has alternates");
  if (o.pretrain_steps < 0) fail("pretrain-steps", "must not be negative");
  if (!(o.pretrain_lr > 0)) fail("pretrain-lr", "must be positive");
  if (task != Task::classify && (o.pretrain_steps > 0 || !o.init_from.empty()))
    fail(o.pretrain_steps > 0 ? "pretrain-steps" : "init-from", "only classify pretrains");
  if (o.pretrain_steps > 0 && !o.init_from.empty())
    fail("init-from", "give either --init-from or --pretrain-steps, not both");
  if (task != Task::lm && !o.init_hf.empty()) fail("init-hf", "only lm fine-tunes");
  if (!o.export_hf.empty() && o.init_hf.empty())
    fail("export-hf",
         "writes a fine-tuned Hugging Face model: give the model to start from with --init-hf");
  if (!o.export_hf.empty()) {
    // The folder's config.json and model.safetensors would replace the run's own config and
    // checkpoint (and its optimizer state) if they shared a folder.
    std::error_code e1, e2;
    const auto file_in = [](const std::string& dir, std::error_code& ec) {
      return std::filesystem::weakly_canonical(std::filesystem::path(dir) / "config.json", ec);
    };
    const std::filesystem::path out = file_in(o.out, e1), hf = file_in(o.export_hf, e2);
    if (out == hf)
      fail("export-hf", "'" + o.export_hf +
                            "' is --out's folder: its config.json and model.safetensors would "
                            "replace the run's own config and checkpoint; give a folder of its "
                            "own, such as " +
                            o.out + "/hf");
  }
  if (!o.init_hf.empty()) {
    if (o.tokenizer != defaults_for(Task::lm).tokenizer)
      fail("tokenizer", "--init-hf encodes with the model folder's own tokenizer");
  }
  if (!o.trace.empty()) {
    // Its folder must exist, or be --out's (which the run creates).
    const std::filesystem::path dir = std::filesystem::path(o.trace).parent_path();
    std::error_code ec, e1, e2;
    if (!dir.empty() && !std::filesystem::is_directory(dir, ec) &&
        std::filesystem::weakly_canonical(dir, e1) != std::filesystem::weakly_canonical(o.out, e2))
      fail("trace", "the folder '" + dir.string() + "' does not exist");
  }
  if (o.beam < 1 || o.beam > 64) fail("beam", "must be between 1 and 64");
  if (!std::isfinite(o.length_penalty) || o.length_penalty < 0)
    fail("length-penalty", "must be a finite number >= 0");
  if (o.bpe_vocab < 260) fail("bpe-vocab", "must be at least 260 (4 special ids and 256 bytes)");
}

}  // namespace stag::train_app

// What stag-train's tasks share: the run's files and config JSON, the trainer options made from
// the flags, batching texts into stag::Batch, and the final `name: value` lines.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <stag/autodiff/autocast.hpp>
#include <stag/models/data/batch.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "options.hpp"
#include "reflect.hpp"

namespace stag::train_app {

// One run of one task: its settings and where its files go.
struct RunContext {
  Task task = Task::classify;
  RunOptions opt;
  std::string checkpoint;  // --save or <out>/model.safetensors
  std::string metrics;     // --metrics or <out>/metrics.jsonl
  std::string resume;      // --resume, or the checkpoint for --eval-only
};

RunContext make_context(Task task, const RunOptions& opt);
// <out>/best.safetensors: the weights of the best validation evaluation (--keep-best).
inline std::string best_path(const RunContext& ctx) {
  return ctx.opt.out + "/best.safetensors";
}

// The JSON stored in checkpoints: {"task", "preset", "model": {config}, "run": {flags}, ...}.
template <class Config>
nlohmann::ordered_json run_config(const RunContext& ctx, const Config& model_config) {
  nlohmann::ordered_json j;
  j["format"] = "stag-train/1";
  j["task"] = task_name(ctx.task);
  j["preset"] = ctx.opt.model;
  // A language model's config in the library's own form (lm_config_to_json: "arch" by name),
  // which Generator and stag-generate read back.
  if constexpr (std::is_same_v<Config, LmConfig>)
    j["model"] = nlohmann::ordered_json::parse(lm_config_to_json(model_config));
  else
    j["model"] = to_json(model_config);
  j["run"] = to_json(ctx.opt);
  return j;
}

namespace detail {
template <const auto& Net>
inline constexpr auto kAutocastNet = autocast<Net>();
}  // namespace detail

// The training graphs of `Net` with `Opt`, or with --precision bf16 those of autocast<Net>()
// (bf16 matmuls), which only the presets with `Bf16` compile (each adds a model's compile time).
template <const auto& Net, auto Opt, bool Bf16>
TrainingGraphs graphs_for(const RunContext& ctx) {
  if (ctx.opt.precision == "bf16") {
    if constexpr (Bf16)
      return training_graphs<detail::kAutocastNet<Net>, Opt>();
    else
      throw Error("stag-train: --precision bf16 is compiled for the presets " +
                  bf16_presets_text() + " only, not for '" + ctx.opt.model + "' of " +
                  task_name(ctx.task) + " (use one of those, or --precision f32 or auto)");
  }
  return training_graphs<Net, Opt>();
}

// The learning-rate schedule the flags describe, over `total_steps` steps.
LrSchedule make_lr_schedule(const RunOptions& o, std::int64_t total_steps, int d_model);
// --device: where the training, evaluation and decoding steps run.
Device run_device(const RunOptions& o);
// Trainer options from the flags: threads, seed, schedule, optimizer settings, metrics, progress.
TrainerOptions trainer_options(const RunContext& ctx, std::int64_t total_steps, int d_model,
                               const std::string& config_json);
// The settings of a checkpoint's run: the saved tokenizer, model and (for --resume) flags must
// match this run's; stag::Error naming the difference otherwise.
nlohmann::json checkpoint_config(const std::string& path, const std::string& task,
                                 const std::string& preset);
// A field of such a config; stag::Error naming the file and the field when it has none.
const nlohmann::json& config_field(const nlohmann::json& config, const char* key,
                                   const std::string& path);
// --resume: the flags that decide the batches (data, tokenizer, limit, batch size, accumulation,
// max length, bucketing, seed, ...) must be those of the checkpoint's run; stag::Error naming
// each flag with both values otherwise.
// Runs `read` (which parses a part of a checkpoint's config) and adds the file and the field to
// the stag::Error it throws.
template <class F>
auto from_checkpoint(const std::string& path, const char* field, F&& read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in checkpoint " + path + ", stag.config field \"" +
                field + "\")");
  }
}
void check_resume_flags(const std::string& path, const nlohmann::json& config, const RunOptions& o);

// The FitOptions the flags give (epochs or --max-steps, accumulation, evaluation and checkpoint
// cadence, --keep-best into best_path, --max-seconds, --force); the caller sets `evaluate`.
FitOptions fit_options(const RunContext& ctx, const std::string& best_metric,
                       bool higher_is_better);

// Optimizer steps in `epochs` epochs of `batches_per_epoch` micro-batches (or --max-steps).
std::int64_t planned_steps(const RunOptions& o, std::size_t batches_per_epoch);

// --export-bf16 PATH: the trainer's current weights as bf16 (a `export_bf16: PATH` line); and
// --trace PATH: what the trace holds, read back from the file (trace_events, trace_runs and
// trace_lanes lines).
void export_weights(const RunContext& ctx, const Trainer& trainer);

// --fail-at-chance: thrown when the trained model does no better than a baseline that learns
// nothing (main exits with status 3). `metric` beats `baseline` when it is above it by more
// than `margin` (higher_is_better) or below it by more than `margin`.
struct AtChance : Error {
  using Error::Error;
};
void require_above_chance(const RunContext& ctx, const std::string& metric, double value,
                          const std::string& baseline, double chance, bool higher_is_better,
                          double margin = 0);
// The training step's arena (train_arena_mib) and, under --memory-budget-mib, what it
// recomputes to stay within it.
void print_step_memory(const Trainer& trainer);

// The final results: `name: value` lines on stdout (what scripts and docs read).
void print_result(const std::string& name, double value);
void print_result(const std::string& name, const std::string& value);

// The progress line's mode from --progress.
ProgressOptions progress_options(const std::string& mode);

// Runs after each final checkpoint: writes the run's side files: <out>/config.json and the
// model's forward graph drawn (collapsed) as model.svg next to the checkpoint. A picture that
// cannot be drawn is reported on stderr and never fails the run.
void write_run_files(const RunContext& ctx, const GraphView& model,
                     const nlohmann::ordered_json& config);

// The model's preset, config and size on stderr, before training.
void print_model(const RunContext& ctx, const nlohmann::ordered_json& config,
                 const GraphView& model, std::size_t tokenizer_vocab);
// train_seconds, train_tokens_per_s (steps only: no data preparation or evaluation) and
// eval_tokens_per_s.
void print_throughput(const Trainer& t, std::initializer_list<EvalStats> evals);
// The accuracy of always answering the training split's most frequent label.
double majority_accuracy(const std::vector<std::int32_t>& train,
                         const std::vector<std::int32_t>& eval);

// The batch plan of each epoch (data::make_batches over `lengths`), made once per epoch and
// shared by copies, so the two functions of a DataSource can each hold one.
class EpochBatches {
 public:
  EpochBatches(std::vector<std::size_t> lengths, data::BatchingOptions options);
  const std::vector<std::vector<std::size_t>>& operator()(std::int64_t epoch) const;

 private:
  struct State {
    std::vector<std::size_t> lengths;
    data::BatchingOptions options;
    std::int64_t epoch = -1;
    std::vector<std::vector<std::size_t>> plan;
  };
  std::shared_ptr<State> s_;
};

// Elements of `rows` first `limit` (0: all).
std::vector<std::size_t> first_n(std::vector<std::size_t> rows, std::int64_t limit);

}  // namespace stag::train_app

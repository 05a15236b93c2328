// stag::Trainer: the training loop's moving parts around sessions of one model. It runs optimizer
// steps (one fused train_step<> graph, or grad<> per micro-batch plus update<> for gradient
// accumulation), evaluation on the forward graph (sharing the trained weights, no copies),
// learning-rate schedules, the metrics log, the progress line, checkpoints and exact resume.
// A user loop is `for (batch : batches) trainer.step(batch);`; fit() is the whole loop.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <stag/autodiff/optimizer.hpp>
#include <stag/runtime/dist/gradient_sync.hpp>
#include <stag/runtime/session.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/lr_schedule.hpp>
#include <stag/runtime/train/metrics.hpp>

namespace stag {

class Trainer;

// The optimizer settings a graph built with `hparams_as_inputs` reads from its inputs.
struct OptimizerSettings {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double momentum = 0.9;  // SGD
  double weight_decay = 0.01;
  double clip_norm = 0.0;  // <= 0: off
};

template <class Opt>
constexpr OptimizerSettings optimizer_settings(const Opt& o) {
  OptimizerSettings s;
  if constexpr (std::is_same_v<Opt, Sgd>) {
    s.momentum = o.momentum;
  } else {
    s.beta1 = o.beta1;
    s.beta2 = o.beta2;
    s.eps = o.eps;
  }
  s.weight_decay = o.weight_decay;
  s.clip_norm = o.clip_norm;
  return s;
}

// The graphs a Trainer runs; make them with training_graphs<model, optimizer>().
struct TrainingGraphs {
  GraphView model;   // the forward graph (result: the loss): evaluation
  GraphView step;    // train_step<model, Opt>: one fused optimizer step
  GraphView grad;    // grad<model>: gradients of one micro-batch (empty: no accumulation)
  GraphView update;  // update<model, Opt>: applies accumulated gradients
  OptimizerSettings defaults = {};  // Opt's values, fed when the graphs read settings as inputs
};

namespace detail {
template <const auto& M, auto Opt>
inline constexpr auto kStepGraph = train_step<M, Opt>();
template <const auto& M>
inline constexpr auto kGradGraph = grad<M>();
template <const auto& M, auto Opt>
inline constexpr auto kUpdateGraph = update<M, Opt>();
}  // namespace detail

// The graphs of model M (a namespace-scope constexpr graph whose result is the loss) trained
// with Opt. `Accumulation = false` leaves out grad<> and update<> (half the compile time);
// such a trainer takes one batch per step.
template <const auto& M, auto Opt, bool Accumulation = true>
TrainingGraphs training_graphs() {
  TrainingGraphs t;
  t.model = M;
  t.step = detail::kStepGraph<M, Opt>;
  t.defaults = optimizer_settings(Opt);
  if constexpr (Accumulation) {
    t.grad = detail::kGradGraph<M>;
    t.update = detail::kUpdateGraph<M, Opt>;
  }
  return t;
}

// One (micro-)batch: the graph's inputs, its weight in the loss (the number of labels that
// count; 0: count them, see count_labels) and how many tokens it holds (throughput only).
struct Batch {
  NamedArrays inputs;
  double weight = 0;
  double tokens = 0;
  // Data parallelism: the global batch row this (rank's part of a) batch starts at; dropout
  // masks are keyed by global row, so they do not depend on the number of ranks.
  std::int64_t row_offset = 0;
};

// The labels of `inputs` that count (not `ignore_index`): from "label", "targets" or "tgt_out",
// whichever the batch has; 1 when it has none of them.
double count_labels(const NamedArrays& inputs, std::int64_t ignore_index = -100);

// Rank `rank`'s part of a global batch of B rows for data parallelism: rows
// [rank*B/size, (rank+1)*B/size) of every input whose first dim is B (B: the labels' first
// dim, or the first input's), other inputs whole. Its weight is recounted from its labels (or
// is its rows' part of `weight`), its tokens are its rows' part, its row_offset is where its
// rows start. A batch with fewer rows than ranks is a stag::Error. size 1: the batch itself.
Batch shard_batch(const Batch& batch, int rank, int size);

enum class NonFinitePolicy : std::uint8_t {
  stop,  // throw NonFiniteLoss (parameters are those of the last good step)
  skip,  // count it, say so, and go on (the update was skipped; parameters unchanged)
};

struct NonFiniteLoss : Error {
  using Error::Error;
  std::int64_t step = 0;
};

struct TrainerOptions {
  // threads, seed (init, dropout, shuffles), init overrides; `trace`: one timeline of the
  // training steps' sessions (the step, micro-batch and update graphs), not of evaluations.
  SessionOptions session = {};
  LrSchedule lr = LrSchedule::constant(1e-3);
  std::optional<OptimizerSettings> optimizer = {};  // default: the graphs' (Opt's) values
  NonFinitePolicy on_nonfinite = NonFinitePolicy::stop;
  // JSON lines, one file per run: a fresh run empties it at its first record; resume() keeps
  // the records up to the checkpoint's step and appends after them.
  std::string metrics_path = {};
  std::int64_t log_every = 1;  // a "train" metrics line every this many steps
  bool progress = true;        // the progress line on stderr (fit)
  ProgressOptions progress_options = {};
  std::string config_json = "{}";  // stored in checkpoints (the model and run settings)
  // Parameters whose largest |value| is above this have left a sane range (a diverged run):
  // save() says so on stderr and in the checkpoint's extra.weights_out_of_range. A parameter
  // that is NaN or infinite is never saved (save() throws and keeps the previous file).
  double weight_limit = 1e4;
  // Load checkpoints with NaN or infinite values (resume, load_weights, init_from) anyway.
  bool allow_nonfinite = false;
  // Data parallelism (docs/distributed.md): the ranks of `comm` train one model. nullptr: the
  // process's world (Communicator::world(): one rank unless launched by mpirun). With more
  // than one rank, step() takes this rank's part of the global batch (fit() splits each batch
  // by rows), gradients are all-reduced in buckets of `bucket_bytes` inside the training step,
  // every rank applies the same update, evaluate() splits its batches across the ranks, and
  // only rank 0 writes metrics and checkpoints and shows progress.
  Communicator* comm = nullptr;
  std::size_t bucket_bytes = std::size_t{25} << 20;
};

struct StepStats {
  std::int64_t step = 0;  // this step's number (from 1)
  double loss = 0;        // weighted mean over the micro-batches
  double grad_norm = 0;   // before clipping
  double lr = 0;
  double tokens = 0;
  double seconds = 0;
  bool skipped = false;  // non-finite loss or gradients: the update did not happen
  // Data parallelism: seconds this rank's collectives took in this step, and how long the step
  // waited for them (the communication that computation did not hide).
  double comm_seconds = 0;
  double comm_waited = 0;
};

struct EvaluateOptions {
  std::string logits = "logits";  // output compared with the labels for accuracy ("" = none)
  std::int64_t ignore_index = -100;
  // Called after each batch with the evaluation session (its outputs are readable).
  std::function<void(const Session&, const Batch&)> on_batch = {};
};

struct EvalStats {
  double loss = 0;      // mean per counted label, in nats
  double accuracy = 0;  // argmax of the logits == label, over counted labels
  double count = 0;     // counted labels (tokens for a language model)
  double tokens = 0;
  double seconds = 0;
  std::int64_t batches = 0;
  double perplexity() const;
  double bits_per_token() const;
  // Bits per character when `chars` characters produced `count` tokens.
  double bits_per_char(double chars) const;
};

// Where a data set's batches come from: micro-batch `i` of epoch `e`, the same for the same
// (e, i) every time (seeded shuffles), so a resumed run sees exactly the data it would have.
struct DataSource {
  std::function<std::size_t(std::int64_t epoch)> num_batches;
  std::function<Batch(std::int64_t epoch, std::size_t index)> batch;
};

struct FitOptions {
  std::int64_t epochs = 1;
  std::int64_t max_steps = 0;   // stop after this many optimizer steps in all (0: epochs decide)
  int accumulation = 1;         // micro-batches per optimizer step
  std::int64_t eval_every = 0;  // steps between evaluations (0: at the end of each epoch)
  std::function<MetricsRecord(Trainer&)> evaluate = {};  // validation; logged and noted
  std::string checkpoint_path = {};   // saved every checkpoint_every steps and at the end
  std::int64_t checkpoint_every = 0;  // 0: only at the end
  std::int64_t stop_after = 0;        // stop early after this many steps of this call (tests)
  // Stop (evaluate and save as at the end) once this call has run this long (0: no limit). With
  // a linear or cosine schedule the trainer measures its step rate over the first
  // `plan_steps` steps and shortens the schedule to the steps that fit; the checkpoint keeps
  // that total (extra.lr_total), so a resumed run follows the same schedule.
  double max_seconds = 0;
  std::int64_t plan_steps = 20;
  // fit() locks the folders of its checkpoint, best and metrics files (RunLock): another
  // process's run there is an error, unless `force` (a warning instead).
  bool force = false;
  // Keeps a checkpoint of the best evaluation so far (early stopping's "best model"): the
  // evaluation record's `best_metric`, higher or lower being better.
  std::string best_path = {};
  std::string best_metric = "accuracy";
  bool higher_is_better = true;
};

// What the steps of this trainer took (this process only: a resumed run starts at zero).
struct TrainTotals {
  std::int64_t steps = 0;
  double tokens = 0;
  double seconds = 0;  // inside step(): the graphs and the accumulation, not data or evaluation
  // The training loss of this process's first and last step with a finite loss (NaN before).
  double first_loss = std::numeric_limits<double>::quiet_NaN();
  double last_loss = std::numeric_limits<double>::quiet_NaN();
};

class Trainer {
 public:
  Trainer(const TrainingGraphs& graphs, TrainerOptions options = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One optimizer step on one batch (the fused graph) or on several micro-batches whose
  // gradients are averaged with their weights (gradient accumulation).
  StepStats step(const Batch& batch);
  StepStats step(const NamedArrays& inputs) { return step(Batch{inputs}); }
  StepStats step(std::span<const Batch> micro_batches);

  // Mean loss and accuracy over `batches` with dropout off, on the current weights. With several
  // ranks each evaluates batches rank, rank + N, ... and the sums are all-reduced (every rank
  // gets the totals; on_batch sees this rank's batches).
  EvalStats evaluate(std::span<const Batch> batches, const EvaluateOptions& options = {});
  // The forward graph's session (current weights): for predictions and decoding.
  Session& eval_session();
  // The plan of the last training step (of the micro-batch graph with accumulation): its arena
  // and what SessionOptions::memory_budget made it recompute. Null before the first step.
  const Plan* step_plan() const;

  // The whole loop: epochs of `data`, steps of `accumulation` micro-batches, progress, metrics,
  // evaluations and checkpoints. Continues from where a resumed checkpoint left off.
  void fit(const DataSource& data, const FitOptions& options);

  // Checkpoints hold every parameter and optimizer moment, the step, the data position and
  // the config; resume() makes the next steps exactly those of an uninterrupted run.
  void save(const std::string& path) const;
  CheckpointInfo resume(const std::string& path);
  // Loads only the weights (for --eval-only): optimizer state and position are not needed.
  CheckpointInfo load_weights(const std::string& path);
  // Writes only the parameters (no optimizer state), converted to `dtype` (bf16: half the size
  // of f32, for inference and export; load_weights and init_from read it back into f32). Not a
  // checkpoint to resume from. Rank 0 writes it.
  void save_weights(const std::string& path, DType dtype = DType::f32) const;
  // Initialises the model's parameters from those of the same name in another run's checkpoint
  // (pretrained weights: a masked-LM encoder into a classifier). Only parameters: optimizer
  // state, step, seed and schedule stay this run's. Parameters the checkpoint lacks keep their
  // initial values, checkpoint tensors this model lacks are ignored; a shape that differs is a
  // stag::Error naming the tensor and both shapes, and so is a checkpoint with no parameter in
  // common. Returns the names of the parameters loaded, sorted.
  std::vector<std::string> init_from(const std::string& path);
  // The same from parameters in memory (a pretrained model: stag::hf::load(folder).weights).
  // Every tensor must be a parameter of this model, with its shape (a stag::Error names the
  // others); parameters not given keep their initial values. Returns the names loaded, sorted.
  std::vector<std::string> init_from(const NamedArrays& weights);

  // Where the data stands, for user loops: step() counts the micro-batches it takes, and
  // end_epoch() moves to the next epoch's first batch. Checkpoints save the position and
  // resume() restores it (epoch() and batch_in_epoch() say where to continue).
  void end_epoch();
  void set_position(std::int64_t epoch, std::size_t batch_in_epoch);

  std::int64_t steps_done() const { return step_; }
  std::int64_t epoch() const { return epoch_; }
  std::size_t batch_in_epoch() const { return next_batch_; }
  std::int64_t skipped_steps() const { return skipped_; }
  const TrainTotals& totals() const { return totals_; }
  // The best evaluation value fit() has seen (NaN before one) and its step; kept in checkpoints.
  double best_value() const { return best_value_; }
  std::int64_t best_step() const { return best_step_; }
  const NamedArrays& params() const;  // parameters and optimizer state (shared by all sessions)
  // The gradient the last step applied (accumulated over micro-batches), before clipping.
  Array gradient(const std::string& param) const;
  const TrainerOptions& options() const { return opts_; }
  Communicator& comm() const { return *comm_; }
  // Copies every parameter and optimizer state tensor from rank 0 to the others (steps do it
  // before the first step and after loading a checkpoint).
  void broadcast_params();
  // Data parallelism: compares every rank's weights with rank 0's (a 64-bit hash of their bytes)
  // and copies rank 0's to the ranks that differ, which happens only when ranks compute
  // differently (other thread counts or kernels on some hosts). Returns how many ranks differed;
  // fit() runs it before each checkpoint and says so on stderr when it is not 0.
  int check_replicas();
  OptimizerSettings& optimizer() { return optim_; }
  // The metrics log (nullptr without metrics_path), opened on first use.
  MetricsLog* metrics();
  // The warnings printed so far (each kind once per trainer): batches without a label that
  // counts, keep masks that keep nothing, weights out of range.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  void set_step_inputs(Session& s, std::int64_t t);
  StepStats finish_step(StepStats st, std::size_t batches);
  void check_signal(const NamedArrays& inputs);
  void warn_once(const std::string& kind, const std::string& text) const;
  std::uint64_t dropout_counter(std::int64_t t, std::size_t micro) const;
  void before_step();
  double global_sum(double local);

  Communicator* comm_ = nullptr;
  std::shared_ptr<AllReduceSync> sync_;
  bool params_synced_ = false;

  TrainingGraphs graphs_;
  TrainerOptions opts_;
  OptimizerSettings optim_;
  std::unique_ptr<Session> step_session_, grad_session_, update_session_, eval_session_;
  NamedArrays accumulated_;  // gradient sums of the last accumulated step
  bool last_accumulated_ = false;
  bool in_backward_ = false;  // the step updates in the backward pass (no gradient outputs)
  std::unique_ptr<MetricsLog> log_;
  std::int64_t step_ = 0, epoch_ = 0, skipped_ = 0;
  TrainTotals totals_;
  double best_value_ = std::numeric_limits<double>::quiet_NaN();
  std::int64_t best_step_ = 0;
  std::size_t next_batch_ = 0;
  mutable std::vector<std::string> warnings_, warned_kinds_;
};

}  // namespace stag

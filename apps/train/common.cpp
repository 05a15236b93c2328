// stag-train's shared pieces: run files, schedules and trainer options from flags, result lines.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include <stag/runtime/trace.hpp>
#include <stag/runtime/viz/render.hpp>

#include "common.hpp"
#include "lm_hf.hpp"

namespace stag::train_app {

RunContext make_context(Task task, const RunOptions& opt) {
  RunContext ctx{task, opt, opt.save, opt.metrics, opt.resume};
  if (ctx.checkpoint.empty()) ctx.checkpoint = opt.out + "/model.safetensors";
  if (ctx.metrics.empty()) ctx.metrics = opt.out + "/metrics.jsonl";
  if (opt.eval_only && ctx.resume.empty()) ctx.resume = ctx.checkpoint;
  std::error_code ec;
  if (std::filesystem::create_directories(opt.out, ec); ec)
    throw Error("stag-train: --out " + opt.out + ": cannot create it (" + ec.message() +
                "); choose a writable location");
  for (const std::string& f : {ctx.checkpoint, ctx.metrics}) {
    const std::filesystem::path dir = std::filesystem::path(f).parent_path();
    if (dir.empty()) continue;
    if (std::filesystem::create_directories(dir, ec); ec)
      throw Error("stag-train: " + f + ": cannot create its folder " + dir.string() + " (" +
                  ec.message() + "); choose a writable location");
  }
  return ctx;
}

LrSchedule make_lr_schedule(const RunOptions& o, std::int64_t total_steps, int d_model) {
  const std::int64_t total = std::max<std::int64_t>(total_steps, o.warmup + 1);
  if (o.lr_schedule == "constant") return LrSchedule::constant(o.lr, o.warmup);
  if (o.lr_schedule == "linear") return LrSchedule::linear(o.lr, o.warmup, total, o.min_lr);
  if (o.lr_schedule == "cosine") return LrSchedule::cosine(o.lr, o.warmup, total, o.min_lr);
  // inverse_sqrt: --lr scales "Attention Is All You Need"'s rate (peak lr / sqrt(d_model *
  // warmup)).
  return LrSchedule::inverse_sqrt(d_model, std::max<std::int64_t>(o.warmup, 1), o.lr);
}

ProgressOptions progress_options(const std::string& mode) {
  ProgressOptions p;
  if (mode == "off") p.out = nullptr;
  if (mode == "terminal") p.mode = ProgressOptions::Mode::terminal;
  if (mode == "plain") p.mode = ProgressOptions::Mode::plain;
  p.every_steps = 50;
  p.every_seconds = 10;
  return p;
}

Device run_device(const RunOptions& o) {
  return device_from_name(o.device).value_or(Device::cpu);  // validate() checked the name
}

TrainerOptions trainer_options(const RunContext& ctx, std::int64_t total_steps, int d_model,
                               const std::string& config_json) {
  const RunOptions& o = ctx.opt;
  TrainerOptions t;
  t.session.threads = o.threads;
  t.session.device = run_device(o);
  t.session.seed = o.seed;
  t.session.memory_budget = static_cast<std::int64_t>(o.memory_budget_mib * 1048576.0);
  t.session.trace = o.trace;
  t.lr = make_lr_schedule(o, total_steps, d_model);
  t.optimizer = OptimizerSettings{.beta1 = o.beta1,
                                  .beta2 = o.beta2,
                                  .eps = o.eps,
                                  .weight_decay = o.weight_decay,
                                  .clip_norm = o.clip_norm};
  t.metrics_path = ctx.metrics;
  t.log_every = 10;
  t.progress = o.progress != "off";
  t.progress_options = progress_options(o.progress);
  t.config_json = config_json;
  t.allow_nonfinite = o.allow_nonfinite;
  return t;
}

nlohmann::json checkpoint_config(const std::string& path, const std::string& task,
                                 const std::string& preset) {
  const CheckpointInfo info = read_checkpoint_info(path);  // stag.config is valid JSON
  nlohmann::json j = nlohmann::json::parse(info.config_json);
  // A field as a string ("" when absent); stag::Error naming the field when it is not one.
  auto text = [&](const char* key) -> std::string {
    if (!j.is_object() || !j.contains(key)) return "";
    if (!j[key].is_string())
      throw Error("stag-train: checkpoint " + path + ": stag.config field \"" + key + "\" is " +
                  j[key].dump() + ", not a string");
    return j[key].get<std::string>();
  };
  if (text("format") != "stag-train/1")
    throw Error("stag-train: " + path +
                " was not written by stag-train (its config has no \"format\": \"stag-train/1\")");
  if (text("task") != task)
    throw Error("stag-train: " + path + " is a '" + text("task") + "' checkpoint, not '" + task +
                "'");
  if (text("preset") != preset)
    throw Error("stag-train: " + path + " holds preset '" + text("preset") + "'; pass --model " +
                text("preset"));
  return j;
}

const nlohmann::json& config_field(const nlohmann::json& config, const char* key,
                                   const std::string& path) {
  if (!config.is_object() || !config.contains(key))
    throw Error("stag-train: checkpoint " + path + ": its stag.config has no \"" + key +
                "\" (was it written by another version of stag-train?)");
  return config[key];
}

void check_resume_flags(const std::string& path, const nlohmann::json& config,
                        const RunOptions& o) {
  // NOTE: exact resume replays the same batches; these flags decide what the batches are.
  if (!config.contains("run") || !config["run"].is_object()) return;
  const nlohmann::json& run = config["run"];
  const nlohmann::json now = to_json(o);
  std::string diffs;
  for (const char* key : {"data", "tokenizer", "limit", "batch_size", "accumulation", "max_len",
                          "bucket", "lowercase", "token_dropout", "alternates", "seed"}) {
    if (!run.contains(key) || !now.contains(key) || run[key] == now[key]) continue;
    std::string flag = key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    diffs += (diffs.empty() ? "" : ", ") + ("--" + flag) + " " + now[key].dump() +
             " (the checkpoint's run had " + run[key].dump() + ")";
  }
  if (!diffs.empty())
    throw Error("stag-train: --resume " + path + ": " + diffs +
                ": a resumed run must see the same batches as the run it continues. Resume with "
                "the checkpoint's values, or start a new run in another --out");
}

FitOptions fit_options(const RunContext& ctx, const std::string& best_metric,
                       bool higher_is_better) {
  const RunOptions& o = ctx.opt;
  FitOptions fit{.epochs = o.max_steps > 0 ? std::int64_t{1} << 40 : o.epochs,
                 .max_steps = o.max_steps,
                 .accumulation = static_cast<int>(o.accumulation),
                 .eval_every = o.eval_every,
                 .checkpoint_path = ctx.checkpoint,
                 .checkpoint_every = o.checkpoint_every,
                 .best_path = o.keep_best ? best_path(ctx) : std::string(),
                 .best_metric = best_metric,
                 .higher_is_better = higher_is_better};
  fit.max_seconds = o.max_seconds;
  fit.force = o.force;
  return fit;
}

std::int64_t planned_steps(const RunOptions& o, std::size_t batches_per_epoch) {
  const auto k = static_cast<std::size_t>(o.accumulation);
  const auto per_epoch = static_cast<std::int64_t>((batches_per_epoch + k - 1) / k);
  return o.max_steps > 0 ? o.max_steps : per_epoch * std::max<std::int64_t>(o.epochs, 1);
}

void print_result(const std::string& name, double value) {
  std::printf("%s: %.6g\n", name.c_str(), value);
  std::fflush(stdout);
}
void print_result(const std::string& name, const std::string& value) {
  std::printf("%s: %s\n", name.c_str(), value.c_str());
  std::fflush(stdout);
}

void print_step_memory(const Trainer& trainer) {
  const Plan* p = trainer.step_plan();
  if (p == nullptr) return;
  print_result("train_arena_mib", static_cast<double>(p->arena_bytes()) / 1048576.0);
  if (const Recompute& rc = p->recompute; rc.budget > 0) {
    print_result("natural_arena_mib", static_cast<double>(rc.natural_peak) / 1048576.0);
    print_result("recomputed_values", static_cast<double>(rc.nodes.size()));
    print_result("recompute_gflop_per_step", static_cast<double>(rc.extra_flops) / 1e9);
  }
}

void require_above_chance(const RunContext& ctx, const std::string& metric, double value,
                          const std::string& baseline, double chance, bool higher_is_better,
                          double margin) {
  if (!ctx.opt.fail_at_chance) return;
  const bool beats = higher_is_better ? value > chance + margin : value < chance - margin;
  if (beats) return;
  char text[320];
  std::snprintf(text, sizeof text, "%s %.4g is not %s %s (%.4g) by more than %.3g", metric.c_str(),
                value, higher_is_better ? "above" : "below", baseline.c_str(), chance, margin);
  throw AtChance("stag-train: --fail-at-chance: " + std::string(text) +
                 ": the model did no better than chance. Train longer (--epochs, --max-steps), "
                 "on more data (--limit), or look at the learning curve in " +
                 ctx.metrics);
}

// --trace: what the file holds, read back from it (node events, traced runs, worker lanes).
void report_trace(const std::string& path) {
  if (path.empty()) return;
  if (!std::filesystem::exists(path)) {
    print_result("trace", "none written (no training step ran)");
    return;
  }
  const TraceSummary t = read_trace_summary(path);
  print_result("trace", path);
  print_result("trace_events", static_cast<double>(t.events));
  print_result("trace_runs", static_cast<double>(t.runs));
  print_result("trace_lanes", static_cast<double>(t.lanes));
}

void export_weights(const RunContext& ctx, const Trainer& trainer) {
  report_trace(ctx.opt.trace);
  if (ctx.opt.export_bf16.empty()) return;
  trainer.save_weights(ctx.opt.export_bf16, DType::bf16);
  print_result("export_bf16", ctx.opt.export_bf16);
}

void write_run_files(const RunContext& ctx, const GraphView& model,
                     const nlohmann::ordered_json& config) {
  if (Communicator::world().rank() != 0) return;  // rank 0 writes the run's files
  std::ofstream(ctx.opt.out + "/config.json") << config.dump(2) << "\n";
  // The picture sits next to the checkpoint. It is a courtesy: a failure (Graphviz missing a
  // plugin, a read-only folder) is reported and the run goes on.
  const std::filesystem::path dir = std::filesystem::path(ctx.checkpoint).parent_path();
  const std::string svg = (dir.empty() ? std::filesystem::path(".") : dir).string() + "/model.svg";
  try {
    draw_model_svg(model, svg, true,
                   std::string("stag-train ") + task_name(ctx.task) + " " + ctx.opt.model);
    std::fprintf(stderr, "stag-train %s: model graph drawn in %s\n", task_name(ctx.task),
                 svg.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "stag-train %s: could not draw the model graph (%s); training is unaffected\n",
                 task_name(ctx.task), e.what());
  }
}

void print_model(const RunContext& ctx, const nlohmann::ordered_json& config,
                 const GraphView& model, std::size_t tokenizer_vocab) {
  std::int64_t params = 0;
  for (int n = 0; n < model.size(); ++n)
    if (model.node(n).flags & kFlagParam) {
      std::int64_t k = 1;
      const ShapeV& s = model.shape(n);
      for (int i = 0; i < s.rank; ++i) k *= s.dims[i].coef;
      params += k;
    }
  std::fprintf(stderr, "stag-train %s: preset %s %s\n", task_name(ctx.task), ctx.opt.model.c_str(),
               config.at("model").dump().c_str());
  std::fprintf(stderr, "stag-train %s: %.2fM parameters, tokenizer %s with %zu ids, data %s, %s\n",
               task_name(ctx.task), static_cast<double>(params) / 1e6, ctx.opt.tokenizer.c_str(),
               tokenizer_vocab, ctx.opt.data.c_str(),
               ctx.opt.precision == "bf16" ? "bf16 matmuls (f32 weights)" : "f32");
}

void print_throughput(const Trainer& t, std::initializer_list<EvalStats> evals) {
  if (t.totals().seconds > 0) {
    print_result("train_seconds", t.totals().seconds);
    print_result("train_tokens_per_s", t.totals().tokens / t.totals().seconds);
  }
  // The losses of this process's first and last steps: a run that learnt ends lower.
  if (std::isfinite(t.totals().first_loss)) {
    print_result("train_loss_first", t.totals().first_loss);
    print_result("train_loss_last", t.totals().last_loss);
  }
  double tokens = 0, seconds = 0;
  for (const EvalStats& e : evals) {
    tokens += e.tokens;
    seconds += e.seconds;
  }
  if (seconds > 0) print_result("eval_tokens_per_s", tokens / seconds);
}

double majority_accuracy(const std::vector<std::int32_t>& train,
                         const std::vector<std::int32_t>& eval) {
  std::map<std::int32_t, std::size_t> counts;
  for (std::int32_t l : train) ++counts[l];
  std::int32_t best = 0;
  std::size_t most = 0;
  for (const auto& [l, c] : counts)
    if (c > most) most = c, best = l;
  double right = 0;
  for (std::int32_t l : eval) right += l == best;
  return eval.empty() ? 0.0 : right / static_cast<double>(eval.size());
}

std::vector<std::size_t> first_n(std::vector<std::size_t> rows, std::int64_t limit) {
  if (limit > 0 && static_cast<std::size_t>(limit) < rows.size())
    rows.resize(static_cast<std::size_t>(limit));
  return rows;
}

}  // namespace stag::train_app

#include <stag/models/presets.hpp>

#include "tasks.hpp"

namespace stag::train_app {

namespace {

// Each preset's name, and its line with the config as JSON.
template <class Table>
std::vector<std::pair<std::string, std::string>> describe_presets(const Table& table) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : table) {
    // A language model's config as the library writes it ("arch" by name, not as a number).
    std::string config;
    if constexpr (std::is_same_v<std::decay_t<decltype(*p.config)>, LmConfig>)
      config = lm_config_to_json(*p.config);
    else
      config = to_json(*p.config).dump();
    out.emplace_back(std::string(p.name), std::string(p.what) + " " + config);
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> list_presets(Task task) {
  switch (task) {
    case Task::classify:
      return describe_presets(kClassifierPresets);
    case Task::lm: {
      auto list = describe_presets(kLmTrainPresets);
      for (const LmPreset& p : hf_presets_for_training())
        if (find_hf_trainable(*p.config) != nullptr)
          list.emplace_back(std::string(p.name), "--init-hf: " + std::string(p.what));
      return list;
    }
    case Task::g2p:
      return describe_presets(kSeq2SeqPresets);
    case Task::seq2seq:
      return describe_presets(kTextSeq2SeqPresets);
  }
  return {};
}

EpochBatches::EpochBatches(std::vector<std::size_t> lengths, data::BatchingOptions options)
    : s_(std::make_shared<State>()) {
  s_->lengths = std::move(lengths);
  s_->options = options;
}

const std::vector<std::vector<std::size_t>>& EpochBatches::operator()(std::int64_t epoch) const {
  if (s_->epoch != epoch) {
    s_->plan = data::make_batches(s_->lengths, s_->options, static_cast<std::uint64_t>(epoch));
    s_->epoch = epoch;
  }
  return s_->plan;
}

}  // namespace stag::train_app

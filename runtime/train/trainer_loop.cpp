// Trainer::fit (epochs of micro-batches, evaluations, checkpoints, progress) and the checkpoint
// round trip that makes a resumed run take exactly the steps of an uninterrupted one.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>

#include <stag/runtime/train/trainer.hpp>

namespace stag {
namespace {

std::int64_t extra_int(const TrainState& s, const std::string& key, const std::string& path) {
  const auto it = s.extra.find(key);
  if (it == s.extra.end()) return 0;
  std::int64_t v = 0;
  const std::string& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error("stag::Trainer: checkpoint " + path + ": extra." + key + " is '" + text +
                "', not an integer");
  return v;
}

// A double as text that reads back to the same value ("nan" included).
std::string double_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(v) >= 1e-3 && std::abs(v) < 1e5 ? "%.4f" : "%.3e", v);
  return buf;
}

}  // namespace

void Trainer::save(const std::string& path) const {
  TrainState st{.step = step_,
                .epoch = epoch_,
                .seed = opts_.session.seed,
                .rng_counter = dropout_counter(step_ + 1, 0),
                .extra = {{"batch", std::to_string(next_batch_)},
                          {"skipped_steps", std::to_string(skipped_)},
                          {"best_step", std::to_string(best_step_)},
                          {"best_value", double_text(best_value_)}}};
  save_checkpoint(path, step_session_->params(), st, opts_.config_json);
}

CheckpointInfo Trainer::resume(const std::string& path) {
  const CheckpointInfo head = read_checkpoint_info(path);
  if (head.state.seed != opts_.session.seed)
    throw Error("stag::Trainer: checkpoint " + path + " was trained with seed " +
                std::to_string(head.state.seed) + ", this run has seed " +
                std::to_string(opts_.session.seed) +
                "; resume with the same seed (dropout and data order depend on it)");
  CheckpointInfo info = load_checkpoint(path, *step_session_);  // values only: shared storage stays
  step_ = info.state.step;
  epoch_ = info.state.epoch;
  next_batch_ = static_cast<std::size_t>(extra_int(info.state, "batch", path));
  skipped_ = extra_int(info.state, "skipped_steps", path);
  best_step_ = extra_int(info.state, "best_step", path);
  const auto best = info.state.extra.find("best_value");
  best_value_ =
      best == info.state.extra.end() ? std::nan("") : std::strtod(best->second.c_str(), nullptr);
  if (!opts_.metrics_path.empty()) {
    // Lines logged after the checkpoint belong to abandoned steps: drop them, then append.
    log_.reset();
    truncate_metrics(opts_.metrics_path, step_);
    log_ = std::make_unique<MetricsLog>(opts_.metrics_path);
  }
  return info;
}

CheckpointInfo Trainer::load_weights(const std::string& path) {
  return load_checkpoint(path, *step_session_, {.allow_missing = true, .allow_unexpected = true});
}

std::vector<std::string> Trainer::init_from(const std::string& path) {
  std::set<std::string> params;
  const GraphView& g = graphs_.model;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam) params.insert(g.name(n));
  std::vector<std::string> loaded;
  for (const std::string& name : read_checkpoint_info(path).tensors)
    if (params.count(name)) loaded.push_back(name);
  if (loaded.empty())
    throw Error("stag::Trainer::init_from: checkpoint " + path +
                " has no parameter of this model (is it another model's?)");
  load_checkpoint(path, *step_session_,
                  {.allow_missing = true,
                   .allow_unexpected = true,
                   .select = [&](const std::string& name) { return params.count(name) > 0; }});
  return loaded;
}

void Trainer::fit(const DataSource& data, const FitOptions& o) {
  if (o.accumulation < 1) throw Error("stag::Trainer::fit: accumulation must be at least 1");
  if (!data.num_batches || !data.batch)
    throw Error("stag::Trainer::fit: the data source is incomplete");
  const auto k = static_cast<std::size_t>(o.accumulation);
  // The steps of the whole run (for the progress line's ETA): the epochs' steps, or max_steps
  // when that comes first. NOTE: with max_steps, epochs may be "unbounded" (2^40): stop counting
  // as soon as max_steps is reached.
  std::int64_t total = 0;
  auto batches_of = [&](std::int64_t e) {
    const std::size_t nb = data.num_batches(e);
    if (nb == 0)
      throw Error("stag::Trainer::fit: epoch " + std::to_string(e) +
                  " has no batches (is the training split empty, or smaller than a batch?)");
    return nb;
  };
  for (std::int64_t e = 0; e < o.epochs && (o.max_steps == 0 || total < o.max_steps); ++e)
    total += static_cast<std::int64_t>((batches_of(e) + k - 1) / k);
  if (o.max_steps > 0) total = std::min(total, o.max_steps);
  ProgressOptions po = opts_.progress_options;
  po.total_steps = total;
  if (!opts_.progress) po.out = nullptr;
  Progress progress(po);

  std::int64_t last_eval = -1;
  auto run_eval = [&] {
    if (!o.evaluate || last_eval == step_) return;
    last_eval = step_;
    MetricsRecord r = o.evaluate(*this);
    r.step = step_;
    r.epoch = epoch_;
    if (r.split == "train") r.split = "valid";
    if (MetricsLog* log = metrics()) log->write(r);
    const std::optional<double> v = r.get(o.best_metric);
    if (!o.best_path.empty() && v && std::isfinite(*v) &&
        (std::isnan(best_value_) || (o.higher_is_better ? *v > best_value_ : *v < best_value_))) {
      best_value_ = *v;
      best_step_ = step_;
      save(o.best_path);
    }
    std::string text = r.split + " step " + std::to_string(r.step) + ":";
    for (const auto& [name, v] : r.values) text += "  " + name + " " + format_value(v);
    progress.note(text);
  };
  auto checkpoint = [&] {
    if (!o.checkpoint_path.empty()) save(o.checkpoint_path);
  };

  std::int64_t taken = 0;
  bool stop = false;
  std::vector<Batch> micro;
  while (!stop && epoch_ < o.epochs && (o.max_steps == 0 || step_ < o.max_steps)) {
    const std::size_t nb = batches_of(epoch_);
    while (next_batch_ < nb) {
      if (o.max_steps > 0 && step_ >= o.max_steps) break;
      micro.clear();
      for (std::size_t j = next_batch_; j < nb && micro.size() < k; ++j)
        micro.push_back(data.batch(epoch_, j));
      const std::int64_t step_epoch = epoch_;
      const StepStats st = step(std::span<const Batch>(micro));
      next_batch_ += micro.size();
      if (next_batch_ >= nb) {  // the epoch is done: the position moves to the next one
        ++epoch_;
        next_batch_ = 0;
      }
      progress.update(st.step, step_epoch, st.loss, st.lr, st.tokens);
      const bool epoch_end = next_batch_ == 0;
      if ((o.eval_every > 0 && step_ % o.eval_every == 0) || (o.eval_every == 0 && epoch_end))
        run_eval();
      if (o.checkpoint_every > 0 && step_ % o.checkpoint_every == 0) checkpoint();
      if (o.stop_after > 0 && ++taken >= o.stop_after) {
        stop = true;
        break;
      }
      if (epoch_end) break;
    }
  }
  progress.finish();
  if (!stop) {
    run_eval();  // the final weights (unless just evaluated)
    checkpoint();
  }
}

}  // namespace stag

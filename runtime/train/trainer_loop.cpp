// Trainer::fit (epochs of micro-batches, evaluations, checkpoints, progress) and the checkpoint
// round trip that makes a resumed run take exactly the steps of an uninterrupted one.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include <stag/runtime/train/run_guard.hpp>
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
  if (v < 0)
    throw Error("stag::Trainer: checkpoint " + path + ": extra." + key + " is " + text +
                ", but it counts something and cannot be negative (is the file edited?)");
  return v;
}

// The parameters of a store (not the optimizer state next to them), by the model graph.
bool is_param(const GraphView& g, const std::string& name) {
  const int n = g.find(name);
  return n >= 0 && (g.node(n).flags & kFlagParam);
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

std::string bucket_text(std::size_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%g MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

// FNV-1a over bytes, chained.
std::uint64_t fnv(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

std::uint64_t fingerprint(std::uint64_t h, const NamedArrays& arrays) {
  for (const auto& [name, a] : arrays) {
    h = fnv(h, name.data(), name.size());
    h = fnv(h, a.dims().data(), a.dims().size() * sizeof(std::int64_t));
    h = fnv(h, a.raw(), a.bytes());
  }
  return h;
}

// How many ranks hold another value than rank 0's (every rank gets the count).
int ranks_differing(Communicator& comm, std::uint64_t mine) {
  std::uint64_t root = mine;
  comm.broadcast(&root, sizeof root, 0);
  double differ = root != mine ? 1 : 0;
  comm.allreduce_sum(&differ, 1);
  return static_cast<int>(differ);
}

}  // namespace

int Trainer::check_replicas() {
  if (!comm_->distributed()) return 0;
  const int differ =
      ranks_differing(*comm_, fingerprint(1469598103934665603ull, step_session_->params()));
  if (differ > 0) broadcast_params();
  return differ;
}

void Trainer::save(const std::string& path) const {
  // NOTE: a NaN weight is never written: the previous checkpoint at `path` (the last good one)
  // stays. Finite weights far out of range are written (they may still be wanted), but said so.
  const GraphView& g = graphs_.model;
  const FiniteReport report =
      check_finite(step_session_->params(), [&](const std::string& n) { return is_param(g, n); });
  if (report.nonfinite > 0)
    throw Error("stag::Trainer::save: " + path + " not written: after step " +
                std::to_string(step_) + " " + report.describe() +
                "; the file there (if any) is kept. Lower the learning rate or clip gradients");
  TrainState st{.step = step_,
                .epoch = epoch_,
                .seed = opts_.session.seed,
                .rng_counter = dropout_counter(step_ + 1, 0),
                .extra = {{"batch", std::to_string(next_batch_)},
                          {"skipped_steps", std::to_string(skipped_)},
                          {"best_step", std::to_string(best_step_)},
                          {"best_value", double_text(best_value_)}}};
  if (opts_.lr.total() > 0) st.extra["lr_total"] = std::to_string(opts_.lr.total());
  if (report.max_abs > opts_.weight_limit && comm_->rank() == 0) {
    st.extra["weights_out_of_range"] = double_text(report.max_abs);
    warn_once("weights-out-of-range",
              "stag::Trainer: saving " + path + " after step " + std::to_string(step_) +
                  ": parameter '" + report.max_abs_name +
                  "' reaches |w| = " + format_value(report.max_abs) + ", above the sane limit " +
                  format_value(opts_.weight_limit) +
                  " (TrainerOptions::weight_limit): the run has diverged, and this checkpoint "
                  "(marked extra.weights_out_of_range) is unlikely to be useful; lower the "
                  "learning rate");
  }
  if (comm_->rank() != 0) return;  // every rank holds the same weights; rank 0 writes them
  save_checkpoint(path, step_session_->params(), st, opts_.config_json);
}

void Trainer::save_weights(const std::string& path, DType dtype) const {
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f64)
    throw Error("stag::Trainer::save_weights: " + path +
                ": weights are saved as f32, f64 or bf16, not " + std::string(dtype_name(dtype)));
  const GraphView& g = graphs_.model;
  NamedArrays weights;
  for (const auto& [name, a] : step_session_->params())
    if (is_param(g, name)) weights.emplace(name, a.to(dtype));
  const FiniteReport report = check_finite(weights, [](const std::string&) { return true; });
  if (report.nonfinite > 0)
    throw Error("stag::Trainer::save_weights: " + path + " not written: " + report.describe());
  if (comm_->rank() != 0) return;
  TrainState st{.step = step_, .epoch = epoch_, .seed = opts_.session.seed};
  st.extra["weights_only"] = std::string(dtype_name(dtype));
  save_checkpoint(path, weights, st, opts_.config_json);
}

CheckpointInfo Trainer::resume(const std::string& path) {
  const CheckpointInfo head = read_checkpoint_info(path);
  if (const auto w = head.state.extra.find("weights_only"); w != head.state.extra.end())
    throw Error("stag::Trainer: " + path + " holds only the weights (" + w->second +
                ", written by save_weights), not the optimizer state a resumed run needs; "
                "resume from the run's checkpoint, or start from these weights with init_from "
                "(--init-from) or evaluate them (--eval-only)");
  if (head.state.seed != opts_.session.seed)
    throw Error("stag::Trainer: checkpoint " + path + " was trained with seed " +
                std::to_string(head.state.seed) + ", this run has seed " +
                std::to_string(opts_.session.seed) +
                "; resume with the same seed (dropout and data order depend on it)");
  CheckpointInfo info = load_checkpoint(  // values only: shared storage stays
      path, *step_session_,
      {.allow_nonfinite = opts_.allow_nonfinite, .expected_config = opts_.config_json});
  step_ = info.state.step;
  epoch_ = info.state.epoch;
  next_batch_ = static_cast<std::size_t>(extra_int(info.state, "batch", path));
  skipped_ = extra_int(info.state, "skipped_steps", path);
  best_step_ = extra_int(info.state, "best_step", path);
  // A time-boxed run fixed its schedule's length: continue on the same schedule.
  if (info.state.extra.count("lr_total") && opts_.lr.total() > 0) {
    const std::int64_t lr_total = extra_int(info.state, "lr_total", path);
    if (lr_total > opts_.lr.warmup()) opts_.lr = opts_.lr.with_total(lr_total);
  }
  const auto best = info.state.extra.find("best_value");
  best_value_ =
      best == info.state.extra.end() ? std::nan("") : std::strtod(best->second.c_str(), nullptr);
  params_synced_ = false;  // rank 0's copy is what every rank goes on from
  if (!opts_.metrics_path.empty() && comm_->rank() == 0) {
    // Lines logged after the checkpoint belong to abandoned steps: drop them, then append.
    log_.reset();
    truncate_metrics(opts_.metrics_path, step_);
    log_ = std::make_unique<MetricsLog>(opts_.metrics_path);
  }
  return info;
}

CheckpointInfo Trainer::load_weights(const std::string& path) {
  params_synced_ = false;
  return load_checkpoint(path, *step_session_,
                         {.allow_missing = true,
                          .allow_unexpected = true,
                          .allow_nonfinite = opts_.allow_nonfinite,
                          .expected_config = opts_.config_json});
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
                   .select = [&](const std::string& name) { return params.count(name) > 0; },
                   .allow_nonfinite = opts_.allow_nonfinite});
  params_synced_ = false;
  return loaded;
}

std::vector<std::string> Trainer::init_from(const NamedArrays& weights) {
  std::set<std::string> params;
  const GraphView& g = graphs_.model;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam) params.insert(g.name(n));
  std::vector<std::string> loaded, unknown;
  for (const auto& [name, value] : weights) (params.count(name) ? loaded : unknown).push_back(name);
  if (!unknown.empty()) {
    std::string list;
    for (std::size_t i = 0; i < unknown.size() && i < 8; ++i)
      list += (i ? ", '" : "'") + unknown[i] + "'";
    if (unknown.size() > 8) list += ", ... (" + std::to_string(unknown.size()) + " in all)";
    throw Error("stag::Trainer::init_from: not parameters of this model: " + list);
  }
  for (const std::string& name : loaded) step_session_->set_param(name, weights.at(name));
  params_synced_ = false;
  return loaded;  // NamedArrays is ordered by name
}

void Trainer::fit(const DataSource& data, const FitOptions& o) {
  if (o.accumulation < 1) throw Error("stag::Trainer::fit: accumulation must be at least 1");
  const std::pair<const char*, double> counts[] = {
      {"epochs", static_cast<double>(o.epochs)},
      {"max_steps", static_cast<double>(o.max_steps)},
      {"eval_every", static_cast<double>(o.eval_every)},
      {"checkpoint_every", static_cast<double>(o.checkpoint_every)},
      {"stop_after", static_cast<double>(o.stop_after)},
      {"max_seconds", o.max_seconds}};
  for (const auto& [name, v] : counts)
    if (!(v >= 0))
      throw Error(std::string("stag::Trainer::fit: FitOptions::") + name + " is " +
                  format_value(v) + "; it must not be negative (0 means no limit or the default)");
  if (!data.num_batches || !data.batch)
    throw Error("stag::Trainer::fit: the data source is incomplete");
  const auto k = static_cast<std::size_t>(o.accumulation);
  // Before step 1: hold the folders of the run's files (no second run writes there meanwhile),
  // and make sure that every save can succeed, so that no work is lost at the first save.
  std::vector<std::unique_ptr<RunLock>> locks;
  std::vector<PlannedFile> files;
  const std::uint64_t checkpoint_bytes = [&] {
    std::uint64_t b = 4096 + opts_.config_json.size();
    for (const auto& [name, a] : params()) b += a.bytes() + 128 + name.size();
    return b;
  }();
  // Only rank 0 writes the run's files: the other ranks neither check nor lock them.
  const bool writer = comm_->rank() == 0;
  for (const std::string& path : {o.checkpoint_path, o.best_path, opts_.metrics_path})
    if (!path.empty() && writer)
      files.push_back({path, path == opts_.metrics_path ? 0 : checkpoint_bytes});
  preflight_check(files);
  for (const PlannedFile& f : files) {
    const std::string dir = std::filesystem::path(f.path).parent_path().string();
    locks.push_back(std::make_unique<RunLock>(dir.empty() ? "." : dir, RunLockOptions{o.force}));
  }
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
  // NOTE: unbounded epochs without max_steps (a time-boxed run) have no known total: counting
  // stops after 10,000 epochs and the progress line shows no total then.
  for (std::int64_t e = 0; e < o.epochs && (o.max_steps == 0 || total < o.max_steps); ++e) {
    if (e == 10000) {
      total = 0;
      break;
    }
    total += static_cast<std::int64_t>((batches_of(e) + k - 1) / k);
  }
  if (o.max_steps > 0) total = std::min(total, o.max_steps);
  ProgressOptions po = opts_.progress_options;
  po.total_steps = total;
  if (!opts_.progress || !writer) po.out = nullptr;
  Progress progress(po);
  progress.set_world(comm_->size());
  if (comm_->distributed())
    progress.note("data-parallel over " + std::to_string(comm_->size()) +
                  " ranks, gradient buckets of " + bucket_text(opts_.bucket_bytes));

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
    if (o.checkpoint_path.empty()) return;
    if (const int differ = check_replicas(); differ > 0 && writer)
      progress.note("the weights of " + std::to_string(differ) + " of " +
                    std::to_string(comm_->size()) + " ranks differed from rank 0's after step " +
                    std::to_string(step_) +
                    " (ranks that compute differently: other thread counts or CPUs?); they were "
                    "copied from rank 0");
    save(o.checkpoint_path);
  };

  std::int64_t taken = 0;
  bool stop = false, out_of_time = false;
  std::vector<Batch> micro;
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    // Every rank takes rank 0's clock, so that all make the same time-box decisions.
    double e = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (comm_->distributed()) comm_->broadcast(&e, sizeof e, 0);
    return e;
  };
  double planned_at = 0;           // when the schedule was last fitted to the time box...
  std::int64_t planned_taken = 0;  // ...after this many steps
  bool replanned = false;
  const std::int64_t full_total = opts_.lr.total();  // the schedule's length before the time box
  while (!stop && !out_of_time && epoch_ < o.epochs && (o.max_steps == 0 || step_ < o.max_steps)) {
    const std::size_t nb = batches_of(epoch_);
    // NOTE: without this check a position at or past the end of the epoch takes no step and
    // never reaches the end of the epoch either: the loop would spin forever.
    if (next_batch_ >= nb)
      throw Error("stag::Trainer::fit: the data position (batch " + std::to_string(next_batch_) +
                  " of epoch " + std::to_string(epoch_) + ") is past the " + std::to_string(nb) +
                  " batches this data source has in that epoch: the checkpoint was written by a "
                  "run with other data or another batch size. Resume with the same data and "
                  "batch size, or start a new run (or Trainer::set_position)");
    while (next_batch_ < nb) {
      if (o.max_steps > 0 && step_ >= o.max_steps) break;
      micro.clear();
      std::uint64_t seen = fnv(1469598103934665603ull, &nb, sizeof nb);
      for (std::size_t j = next_batch_; j < nb && micro.size() < k; ++j) {
        const Batch global = data.batch(epoch_, j);
        if (comm_->distributed()) seen = fingerprint(seen, global.inputs);
        micro.push_back(shard_batch(global, comm_->rank(), comm_->size()));
      }
      // NOTE: ranks given different global batches would each train on rows no other rank
      // sees, and nothing else would notice: every rank checks rank 0's batch first.
      if (comm_->distributed())
        if (const int differ = ranks_differing(*comm_, seen); differ > 0)
          throw Error("stag::Trainer::fit: step " + std::to_string(step_ + 1) + ": " +
                      std::to_string(differ) + " of " + std::to_string(comm_->size()) +
                      " ranks were given other batches than rank 0 (batch " +
                      std::to_string(next_batch_) + " of epoch " + std::to_string(epoch_) +
                      "): every rank must get the same global batches from the DataSource "
                      "(the same data, batch size and seeds; no shuffle seeded per process)");
      const std::int64_t step_epoch = epoch_;
      const StepStats st = step(std::span<const Batch>(micro));  // moves the position on
      if (next_batch_ >= nb) end_epoch();  // the epoch is done: on to the next one's first batch
      progress.update_comm(st.seconds, st.comm_seconds, st.comm_waited);
      progress.update(st.step, step_epoch, st.loss, st.lr, st.tokens);
      const bool epoch_end = next_batch_ == 0;
      if ((o.eval_every > 0 && step_ % o.eval_every == 0) || (o.eval_every == 0 && epoch_end))
        run_eval();
      if (o.checkpoint_every > 0 && step_ % o.checkpoint_every == 0) checkpoint();
      if (o.stop_after > 0 && ++taken >= o.stop_after) {
        stop = true;
        break;
      }
      if (o.max_seconds > 0) {
        if (o.stop_after == 0) ++taken;
        // The schedule's length from the step rate: after plan_steps steps, and again after
        // 10x as many if the schedule is still warming up (the first steps plan kernels for
        // new shapes and run slower than the rest; before the warmup ends the total has not
        // changed any learning rate yet). After the warmup it is fitted again each time another
        // twentieth of the box has passed: a rate that changes later (a host that gets busier
        // or less busy, evaluations that take longer than the steps they were measured with)
        // would otherwise reach the box's end with the schedule far from its own, at a high
        // learning rate (the g2p run of 2026-12-08 stopped at 71 % of its cosine), or finish
        // the schedule early. Each later estimate uses the steps and seconds (evaluations
        // included) since the one before; the learning rate moves a little at each.
        const double now = elapsed();
        const std::int64_t first = std::max<std::int64_t>(o.plan_steps, 1);
        const bool warming = step_ <= opts_.lr.warmup();
        const bool replan = planned_at > 0 && !replanned && taken >= 10 * first && warming;
        const bool refit = planned_at > 0 && !warming && taken > planned_taken &&
                           now >= planned_at + o.max_seconds / 20;
        if (full_total > 0 && ((planned_at == 0 && taken >= first) || replan || refit)) {
          const double rate = planned_at > 0 ? static_cast<double>(taken - planned_taken) /
                                                   std::max(now - planned_at, 1e-9)
                                             : static_cast<double>(taken) / now;
          if (replan) replanned = true;
          planned_at = now;
          planned_taken = taken;
          const auto fit_steps =
              step_ + static_cast<std::int64_t>(rate * std::max(0.0, o.max_seconds - now));
          const std::int64_t new_total =
              std::max({std::min(fit_steps, full_total), opts_.lr.warmup() + 1, step_ + 1});
          const std::int64_t old_total = opts_.lr.total();
          if (new_total != old_total) {
            opts_.lr = opts_.lr.with_total(new_total);
            if (total > 0) progress.set_total(std::min(total, new_total));
            // Noted when it moves by more than 2 % (the refits would otherwise fill the log).
            if (!refit || std::abs(new_total - old_total) * 50 > old_total)
              progress.note("time box of " + format_value(o.max_seconds) +
                            " s: " + std::to_string(new_total) + " steps fit, schedule now " +
                            opts_.lr.describe());
          }
        }
        // The schedule fitted to the box is over (the steps ran faster than estimated): more
        // steps would run at the schedule's floor learning rate (0 for a cosine) until the box
        // ends, as the run of 2026-12-07 did for 2,000 steps; it ends here instead.
        if (opts_.lr.total() > 0 && step_ >= opts_.lr.total()) {
          progress.note("time box of " + format_value(o.max_seconds) + " s: the schedule's " +
                        std::to_string(opts_.lr.total()) + " steps are done after " +
                        format_value(elapsed()) + " s");
          out_of_time = true;
          break;
        }
        if (now >= o.max_seconds) {
          progress.note("time box of " + format_value(o.max_seconds) + " s reached after step " +
                        std::to_string(step_));
          out_of_time = true;
          break;
        }
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

// stag::Trainer: sessions sharing one parameter store, the optimizer step (fused or accumulated),
// evaluation, and the run state that checkpoints carry.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <stag/runtime/train/trainer.hpp>

namespace stag {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// This step's communication: the communicator's totals since `c0`.
void add_comm(StepStats& st, const Communicator& comm, const CommTotals& c0) {
  const CommTotals c1 = comm.totals();
  st.comm_seconds = c1.seconds - c0.seconds;
  st.comm_waited = c1.waited - c0.waited;
}

Array scalar_f32(double v) {
  return Array::from<float>({}, {static_cast<float>(v)});
}

bool has_input(const GraphView& g, std::string_view name) {
  const int n = g.find(name);
  return n >= 0 && (g.node(n).flags & kFlagInput);
}

// A training step whose optimizer updates in the backward pass (`in_backward`): it reports a
// gradient norm but keeps no gradient as an output.
bool updates_in_backward(const GraphView& g) {
  if (g.output("grad_norm") < 0) return false;
  for (const OutputEntry& o : g.outputs)
    if (o.grad_of >= 0) return false;
  return true;
}

// The labels a batch is scored against: the first of the usual names it has.
const Array* find_labels(const NamedArrays& inputs) {
  for (const char* name : {"label", "targets", "tgt_out"}) {
    const auto it = inputs.find(name);
    if (it != inputs.end()) return &it->second;
  }
  return nullptr;
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::abs(v) >= 1e-3 && std::abs(v) < 1e5 ? "%.4f" : "%.3e", v);
  return buf;
}

}  // namespace

double count_labels(const NamedArrays& inputs, std::int64_t ignore_index) {
  const Array* labels = find_labels(inputs);
  if (labels == nullptr) return 1;
  double n = 0;
  for (std::int64_t i = 0; i < labels->numel(); ++i)
    n += labels->at(i) != static_cast<double>(ignore_index);
  return n;
}

namespace {
// The rows of a batch: the labels' first dim, or the first input's (0: none).
std::int64_t batch_rows(const NamedArrays& inputs) {
  const Array* labels = find_labels(inputs);
  const Array* ref = labels != nullptr ? labels
                     : inputs.empty()  ? nullptr
                                       : &inputs.begin()->second;
  return ref != nullptr && ref->rank() >= 1 ? ref->dim(0) : 0;
}
}  // namespace

Batch shard_batch(const Batch& batch, int rank, int size) {
  if (size <= 1) return batch;
  const std::int64_t rows = batch_rows(batch.inputs);
  if (rows == 0)
    throw Error("stag::shard_batch: the batch has no input with rows (a first dim) to split");
  if (rows < size)
    throw Error("stag::shard_batch: a batch of " + std::to_string(rows) +
                " rows cannot be split across " + std::to_string(size) +
                " ranks; use a batch size of at least the number of ranks");
  const std::int64_t lo = rank * rows / size, hi = (rank + 1) * rows / size;
  Batch out;
  for (const auto& [name, a] : batch.inputs) {
    if (a.rank() < 1 || a.dim(0) != rows) {
      out.inputs.emplace(name, a);
      continue;
    }
    std::vector<std::int64_t> dims = a.dims();
    dims[0] = hi - lo;
    Array part(a.dtype(), dims);
    const std::size_t row_bytes = a.bytes() / static_cast<std::size_t>(rows);
    std::memcpy(part.raw(),
                static_cast<const char*>(a.raw()) + static_cast<std::size_t>(lo) * row_bytes,
                static_cast<std::size_t>(hi - lo) * row_bytes);
    out.inputs.emplace(name, std::move(part));
  }
  const double part = static_cast<double>(hi - lo) / static_cast<double>(rows);
  out.weight = batch.weight > 0 && find_labels(batch.inputs) == nullptr ? batch.weight * part : 0;
  out.tokens = batch.tokens * part;
  out.row_offset = batch.row_offset + lo;
  return out;
}

double EvalStats::perplexity() const {
  return std::exp(loss);
}
double EvalStats::bits_per_token() const {
  return loss / std::log(2.0);
}
double EvalStats::bits_per_char(double chars) const {
  return chars > 0 ? loss * count / std::log(2.0) / chars : std::nan("");
}

Trainer::Trainer(const TrainingGraphs& graphs, TrainerOptions options)
    : graphs_(graphs),
      opts_(std::move(options)),
      optim_(opts_.optimizer.value_or(graphs.defaults)) {
  if (graphs_.step.size() == 0 || graphs_.model.size() == 0)
    throw Error(
        "stag::Trainer: the graphs need a model and a training step (use training_graphs<model, "
        "optimizer>())");
  in_backward_ = updates_in_backward(graphs_.step);
  if (opts_.optimizer && !has_input(graphs_.step, "weight_decay"))
    throw Error(
        "stag::Trainer: TrainerOptions::optimizer was given, but the training graph has its "
        "optimizer settings "
        "compiled in; build it with the optimizer's hparams_as_inputs = true");
  if (in_backward_ && optim_.clip_norm > 0)
    throw Error(
        "stag::Trainer: clip_norm = " + format_value(optim_.clip_norm) +
        ", but the training step updates each parameter in the backward pass (in_backward), "
        "before the global gradient norm is known; set clip_norm = 0 or build the step without "
        "in_backward");
  if (opts_.log_every < 1) throw Error("stag::Trainer: log_every must be at least 1");
  comm_ = opts_.comm != nullptr ? opts_.comm : &Communicator::world();
  SessionOptions so = opts_.session;
  so.keep.clear();  // names of the evaluation graph's nodes (see eval_session)
  so.keep_all = false;
  if (comm_->distributed()) {
    sync_ = std::make_shared<AllReduceSync>(*comm_, opts_.bucket_bytes);
    so.gradient_sync = sync_;
  }
  step_session_ = std::make_unique<Session>(graphs_.step, so);
  so.gradient_sync = nullptr;  // accumulation sums the micro-batches first (step(span))
  if (graphs_.grad.size() > 0 && graphs_.update.size() > 0) {
    so.shared_params = step_session_->params();
    grad_session_ = std::make_unique<Session>(graphs_.grad, so);
    so.memory_budget = 0;  // no forward values to recompute: the gradients are its inputs
    update_session_ = std::make_unique<Session>(graphs_.update, so);
  }
}

MetricsLog* Trainer::metrics() {
  if (comm_->rank() != 0) return nullptr;  // rank 0 writes the run's files
  // Opened at the first record: a fresh run starts the file anew (one file per run), while
  // resume() has already opened it for appending after the checkpoint's step.
  if (!log_ && !opts_.metrics_path.empty())
    log_ = std::make_unique<MetricsLog>(opts_.metrics_path, /*append=*/false);
  return log_.get();
}

Trainer::~Trainer() = default;

const NamedArrays& Trainer::params() const {
  return step_session_->params();
}

const Plan* Trainer::step_plan() const {
  for (const Session* s : {grad_session_.get(), step_session_.get()})
    if (s != nullptr && s->num_plans() > 0) return &s->plan();
  return nullptr;
}

Session& Trainer::eval_session() {
  if (!eval_session_) {
    SessionOptions so = opts_.session;
    so.gradient_sync = nullptr;
    so.shared_params = step_session_->params();
    so.memory_budget = 0;  // the budget is the training step's: a forward pass has no backward
    so.trace.clear();      // the trace is the training steps' timeline
    eval_session_ = std::make_unique<Session>(graphs_.model, so);
  }
  return *eval_session_;
}

std::uint64_t Trainer::dropout_counter(std::int64_t t, std::size_t micro) const {
  // Every micro-batch of every step draws its own dropout masks, and the same ones on resume.
  return static_cast<std::uint64_t>(t) * 4096u + micro;
}

void Trainer::set_step_inputs(Session& s, std::int64_t t) {
  const GraphView& g = s.graph();
  s.set_input("lr", scalar_f32(opts_.lr.at(t)));
  if (has_input(g, "step")) s.set_input("step", scalar_f32(static_cast<double>(t)));
  const std::pair<const char*, double> settings[] = {{"beta1", optim_.beta1},
                                                     {"beta2", optim_.beta2},
                                                     {"eps", optim_.eps},
                                                     {"momentum", optim_.momentum},
                                                     {"weight_decay", optim_.weight_decay},
                                                     {"clip_norm", optim_.clip_norm}};
  for (const auto& [name, value] : settings)
    if (has_input(g, name)) s.set_input(name, scalar_f32(value));
}

void Trainer::warn_once(const std::string& kind, const std::string& text) const {
  if (std::find(warned_kinds_.begin(), warned_kinds_.end(), kind) != warned_kinds_.end()) return;
  warned_kinds_.push_back(kind);
  warnings_.push_back(text);
  std::fprintf(stderr, "%s\n", text.c_str());
}

void Trainer::check_signal(const NamedArrays& inputs) {
  // NOTE: a batch whose labels are all ignored has loss 0 and zero gradients (only weight decay
  // moves the weights), and a row whose keep mask is all false is predicted from no input at
  // all; both are finite, so nothing else would notice.
  if (find_labels(inputs) != nullptr && count_labels(inputs) == 0)
    warn_once("no-labels", "stag::Trainer: step " + std::to_string(step_ + 1) +
                               ": the batch has no label that counts (every one is the ignore "
                               "index -100), so its loss is 0 and nothing is learnt from it; "
                               "check the data pipeline (this warning is shown once per run)");
  for (const auto& [name, a] : inputs) {
    if (a.dtype() != DType::boolean || a.rank() != 2 ||
        !(name == "keep" || name.ends_with("_keep")))
      continue;
    const std::int64_t rows = a.dim(0), cols = a.dim(1);
    const auto* keep = static_cast<const unsigned char*>(a.raw());
    for (std::int64_t r = 0; r < rows; ++r) {
      if (cols > 0 && std::none_of(keep + r * cols, keep + (r + 1) * cols,
                                   [](unsigned char k) { return k != 0; })) {
        warn_once("empty-keep:" + name,
                  "stag::Trainer: step " + std::to_string(step_ + 1) + ": row " +
                      std::to_string(r) + " of '" + name + "' " + a.shape_string() +
                      " keeps no position, so that example's prediction cannot depend on its "
                      "input; drop empty examples before batching (this warning is shown once "
                      "per run)");
        break;
      }
    }
  }
}

void Trainer::end_epoch() {
  ++epoch_;
  next_batch_ = 0;
}

void Trainer::set_position(std::int64_t epoch, std::size_t batch_in_epoch) {
  if (epoch < 0)
    throw Error("stag::Trainer::set_position: epoch " + std::to_string(epoch) + " < 0");
  epoch_ = epoch;
  next_batch_ = batch_in_epoch;
}

void Trainer::broadcast_params() {
  // NOTE: NamedArrays is ordered by name, so every rank sends the tensors in the same order.
  for (const auto& [name, a] : step_session_->params())
    comm_->broadcast(const_cast<void*>(a.raw()), a.bytes(), 0);
  params_synced_ = true;
}

void Trainer::before_step() {
  if (comm_->distributed() && !params_synced_ && step_session_->has_params()) broadcast_params();
}

double Trainer::global_sum(double local) {
  comm_->allreduce_sum(&local, 1);
  return local;
}

StepStats Trainer::step(const Batch& batch) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t t = step_ + 1;
  before_step();
  const CommTotals c0 = comm_->totals();
  check_signal(batch.inputs);
  Session& s = *step_session_;
  s.set_inputs(batch.inputs);
  set_step_inputs(s, t);
  // Each rank's gradients count with its labels' share of the global batch.
  const double w = batch.weight > 0 ? batch.weight : count_labels(batch.inputs);
  double total = w;
  if (sync_) {
    total = global_sum(w);
    sync_->set_share(total > 0 ? static_cast<float>(w / total)
                               : 1.0f / static_cast<float>(comm_->size()));
  }
  s.run({.training = true,
         .step = dropout_counter(t, 0),
         .row_offset = batch.row_offset,
         .rows = batch_rows(batch.inputs)});
  last_accumulated_ = false;
  StepStats st{.step = t,
               .loss = s.result(),
               .grad_norm = s.get("grad_norm").at(0),
               .lr = opts_.lr.at(t),
               .tokens = batch.tokens};
  if (sync_) {
    double v[2] = {total > 0 ? w * st.loss : st.loss / comm_->size(), st.tokens};
    comm_->allreduce_sum(v, 2);
    st.loss = total > 0 ? v[0] / total : v[0];
    st.tokens = v[1];
    add_comm(st, *comm_, c0);
  }
  st.seconds = seconds_since(t0);
  if (!params_synced_ && comm_->distributed()) broadcast_params();  // params made by the run
  return finish_step(st, 1);
}

StepStats Trainer::step(std::span<const Batch> micro) {
  if (micro.empty()) throw Error("stag::Trainer::step: no micro-batches");
  if (micro.size() == 1) return step(micro[0]);
  if (!grad_session_)
    throw Error(
        "stag::Trainer::step: " + std::to_string(micro.size()) +
        " micro-batches, but this trainer has no accumulation graphs (training_graphs<..., true>)");
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t t = step_ + 1;
  before_step();
  const CommTotals c0 = comm_->totals();
  std::vector<double> w;
  double total = 0;
  for (const Batch& b : micro)
    total += w.emplace_back(b.weight > 0 ? b.weight : count_labels(b.inputs));
  if (comm_->distributed()) total = global_sum(total);
  if (!(total > 0)) throw Error("stag::Trainer::step: the micro-batches have no labels that count");
  for (const Batch& b : micro) check_signal(b.inputs);
  const GraphView& gg = graphs_.grad;
  if (accumulated_.empty())
    for (const OutputEntry& o : gg.outputs)
      if (o.grad_of >= 0 && (gg.node(o.grad_of).flags & kFlagParam))
        accumulated_.emplace(
            gg.name(o.grad_of),
            Array(DType::f32, step_session_->params().at(gg.name(o.grad_of)).dims()));
  for (auto& [name, acc] : accumulated_) std::fill_n(acc.data<float>(), acc.numel(), 0.f);
  StepStats st{.step = t, .lr = opts_.lr.at(t)};
  Session& gs = *grad_session_;
  for (std::size_t i = 0; i < micro.size(); ++i) {
    gs.set_inputs(micro[i].inputs);
    gs.run({.training = true,
            .step = dropout_counter(t, i),
            .row_offset = micro[i].row_offset,
            .rows = batch_rows(micro[i].inputs)});
    const float share = static_cast<float>(w[i] / total);
    st.loss += w[i] / total * gs.result();
    st.tokens += micro[i].tokens;
    for (auto& [name, acc] : accumulated_) {
      const Array g = gs.get("grad/" + name);
      float* a = acc.data<float>();
      const float* gv = g.data<float>();
      for (std::int64_t k = 0; k < acc.numel(); ++k) a[k] += share * gv[k];
    }
  }
  if (comm_->distributed()) {
    // The accumulated gradients are summed across ranks once, after the last micro-batch.
    std::vector<Communicator::Ticket> tickets;
    for (auto& [name, acc] : accumulated_)
      tickets.push_back(
          comm_->start_allreduce_sum(acc.data<float>(), static_cast<std::size_t>(acc.numel())));
    for (const Communicator::Ticket k : tickets) comm_->wait(k);
    double v[2] = {st.loss, st.tokens};
    comm_->allreduce_sum(v, 2);
    st.loss = v[0];
    st.tokens = v[1];
  }
  Session& us = *update_session_;
  for (const auto& [name, acc] : accumulated_) us.set_input(name + ".grad", acc);
  set_step_inputs(us, t);
  us.run();
  last_accumulated_ = true;
  st.grad_norm = us.get("grad_norm").at(0);
  if (comm_->distributed()) add_comm(st, *comm_, c0);
  st.seconds = seconds_since(t0);
  return finish_step(st, micro.size());
}

StepStats Trainer::finish_step(StepStats st, std::size_t batches) {
  st.skipped = !std::isfinite(st.grad_norm);
  // An in_backward step skips only the parameters with non-finite gradients, unless the loss
  // itself is not finite.
  const bool partial = in_backward_ && !last_accumulated_ && std::isfinite(st.loss);
  if (!std::isfinite(st.loss) || st.skipped) {
    const std::string what = "stag::Trainer: step " + std::to_string(st.step) + ": the loss is " +
                             format_value(st.loss) + " and the gradient norm " +
                             format_value(st.grad_norm);
    if (opts_.on_nonfinite == NonFinitePolicy::stop) {
      NonFiniteLoss e(
          what +
          (!st.skipped ? "; the gradients were finite and were applied"
           : partial   ? "; the parameters whose gradients were finite were updated in the "
                         "backward pass (in_backward), the others were not"
                       : "; the update was skipped, so the parameters are those after step " +
                           std::to_string(st.step - 1)) +
          ". Lower the learning rate, clip gradients (clip_norm), check the inputs of this batch, "
          "or pass NonFinitePolicy::skip");
      e.step = st.step;
      throw e;
    }
    ++skipped_;
    std::fprintf(stderr, "%s; skipped (%lld so far)\n", what.c_str(),
                 static_cast<long long>(skipped_));
  }
  step_ = st.step;
  next_batch_ += batches;  // the data position (fit() and user loops move to the next epoch)
  ++totals_.steps;
  totals_.tokens += st.tokens;
  totals_.seconds += st.seconds;
  if (std::isfinite(st.loss)) {
    if (std::isnan(totals_.first_loss)) totals_.first_loss = st.loss;
    totals_.last_loss = st.loss;
  }
  if (step_ % opts_.log_every == 0 || st.skipped) {
    MetricsLog* log = metrics();
    MetricsRecord r{.step = step_, .epoch = epoch_};
    r.set("loss", st.loss).set("lr", st.lr).set("grad_norm", st.grad_norm);
    if (st.tokens > 0 && st.seconds > 0) r.set("tokens_per_s", st.tokens / st.seconds);
    r.set("step_ms", 1e3 * st.seconds);
    if (comm_->distributed())
      r.set("comm_ms", 1e3 * st.comm_seconds).set("comm_exposed_ms", 1e3 * st.comm_waited);
    if (log) log->write(r);
  }
  return st;
}

Array Trainer::gradient(const std::string& param) const {
  if (last_accumulated_) {
    const auto it = accumulated_.find(param);
    if (it == accumulated_.end())
      throw Error("stag::Trainer::gradient: no parameter called '" + param + "'");
    return it->second.clone();
  }
  if (in_backward_)
    throw Error(
        "stag::Trainer::gradient: the training step updates each parameter in the "
        "backward pass (in_backward) and keeps no gradients; build it without in_backward "
        "to read them");
  return step_session_->get("grad/" + param);
}

EvalStats Trainer::evaluate(std::span<const Batch> batches, const EvaluateOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  Session& s = eval_session();
  EvalStats st;
  double loss_sum = 0, correct = 0, scored = 0;
  const auto ranks = static_cast<std::size_t>(comm_->size());
  for (std::size_t i = static_cast<std::size_t>(comm_->rank()); i < batches.size(); i += ranks) {
    const Batch& b = batches[i];
    s.set_inputs(b.inputs);
    s.run({.training = false});
    const double w = b.weight > 0 ? b.weight : count_labels(b.inputs, options.ignore_index);
    if (w > 0) loss_sum += w * s.result();  // NOTE: a batch with no counted label has a NaN mean
    st.count += w;
    st.tokens += b.tokens;
    ++st.batches;
    const Array* labels = find_labels(b.inputs);
    if (!options.logits.empty() && labels != nullptr) {
      const Array logits = s.get(options.logits);
      const std::int64_t classes = logits.dim(-1), rows = logits.numel() / classes;
      if (rows != labels->numel())
        throw Error("stag::Trainer::evaluate: '" + options.logits + "' is " +
                    logits.shape_string() + " but the labels are " + labels->shape_string());
      const float* x = logits.data<float>();
      for (std::int64_t r = 0; r < rows; ++r) {
        const double want = labels->at(r);
        if (want == static_cast<double>(options.ignore_index)) continue;
        std::int64_t best = 0;
        for (std::int64_t c = 1; c < classes; ++c)
          if (x[r * classes + c] > x[r * classes + best]) best = c;
        correct += static_cast<double>(best) == want;
        ++scored;
      }
    }
    if (options.on_batch) options.on_batch(s, b);
  }
  if (comm_->distributed()) {
    double v[6] = {loss_sum, st.count, st.tokens, static_cast<double>(st.batches), correct, scored};
    comm_->allreduce_sum(v, 6);
    loss_sum = v[0];
    st.count = v[1];
    st.tokens = v[2];
    st.batches = static_cast<std::int64_t>(v[3]);
    correct = v[4];
    scored = v[5];
  }
  st.loss = st.count > 0 ? loss_sum / st.count : std::nan("");
  st.accuracy = scored > 0 ? correct / scored : std::nan("");
  st.seconds = seconds_since(t0);
  return st;
}

}  // namespace stag

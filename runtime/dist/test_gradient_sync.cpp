// Gradient sync inside the plan, in a world of one (the all-reduce itself is tested on 2 ranks
// by tests/mpi/): bucket boundaries, the order of the hooks (each gradient handed over once,
// after the node computing it and before any node reading it), and the share that scales the
// gradients the optimizer applies, under both schedules.
#include <cstring>
#include <mutex>

#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr int D = 16;

template <int Out, class S>
constexpr auto dense(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  return matmul(x, param<Shape<in, Out>>(s, "weight")) + param<Shape<Out>>(s, "bias", kZeros);
}

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, D>>(g);
  auto h1 = gelu(dense<2 * D>(g / "l1", x));
  auto h2 = gelu(dense<D>(g / "l2", h1));
  return mean<0, 1>(dense<D>(g / "l3", h2) * x);
});
constexpr auto step_graph = train_step<net, AdamW{.clip_norm = 1.0}>();

NamedArrays inputs() {
  return {{"x", th::random_array(DType::f32, {6, D}, 3)},
          {"lr", Array::from<float>({}, {1e-2f})},
          {"step", Array::from<float>({}, {1.f})}};
}

// One step of the training graph, with `sync` (or none) handed the gradients.
std::unique_ptr<Session> run_step(Schedule sched, std::shared_ptr<GradientSync> sync) {
  auto s = std::make_unique<Session>(
      step_graph,
      SessionOptions{.threads = 2, .schedule = sched, .seed = 4, .gradient_sync = sync});
  s->set_inputs(inputs());
  s->run();
  return s;
}

// Logs every hook call, and what each gradient held when it was handed over.
struct Recorder final : GradientSync {
  struct Hooks final : StepSync {
    Recorder& r;
    std::vector<SyncSlot> slots;
    explicit Hooks(Recorder& rec, std::vector<SyncSlot> s) : r(rec), slots(std::move(s)) {}
    void begin() override { log("begin", -1); }
    void ready(int k) override {
      const SyncSlot& s = slots[static_cast<std::size_t>(k)];
      std::lock_guard lock(r.mu);
      r.at_ready[k].assign(s.data, s.data + s.numel);
      r.events.emplace_back("ready", k);
    }
    void wait(int k) override { log("wait", k); }
    void finish() override { log("finish", -1); }
    std::vector<int> groups() const override { return gradient_buckets(slots, 1 << 10); }
    void log(const char* what, int k) {
      std::lock_guard lock(r.mu);
      r.events.emplace_back(what, k);
    }
  };
  std::unique_ptr<StepSync> make(std::vector<SyncSlot> s) override {
    slots = s;
    return std::make_unique<Hooks>(*this, std::move(s));
  }
  std::mutex mu;
  std::vector<SyncSlot> slots;
  std::vector<std::pair<std::string, int>> events;
  std::map<int, std::vector<float>> at_ready;
};

TEST_CASE("gradient buckets close at the byte limit and before a gradient read early", "[dist]") {
  auto slot = [](int producer, int reader, std::int64_t numel) {
    return SyncSlot{.node = producer, .producer = producer, .first_reader = reader, .numel = numel};
  };
  // 100-float gradients, 1000-byte buckets: two per bucket (a bucket closes once it holds at
  // least the limit).
  std::vector<SyncSlot> s = {slot(1, 50, 100), slot(2, 50, 100), slot(3, 50, 100), slot(4, 50, 100),
                             slot(5, 50, 100)};
  CHECK(gradient_buckets(s, 400) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(gradient_buckets(s, 800) == std::vector<int>{0, 0, 1, 1, 2});
  CHECK(gradient_buckets(s, 0) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(gradient_buckets(s, 1 << 20) == std::vector<int>{0, 0, 0, 0, 0});
  // Slot 1 is read at node 3, before slot 3 (node 4) exists: the bucket closes after node 3's.
  s[1].first_reader = 3;
  CHECK(gradient_buckets(s, 1 << 20) == std::vector<int>{0, 0, 0, 1, 1});
}

TEST_CASE("a plan hands each gradient over once it is final and waits before reading it",
          "[dist]") {
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO((sched == Schedule::parallel ? "parallel" : "sequential"));
    auto rec = std::make_shared<Recorder>();
    const auto plain_run = run_step(sched, nullptr), synced_run = run_step(sched, rec);
    const Session &plain = *plain_run, &synced = *synced_run;
    // Every parameter's gradient is a slot.
    std::size_t params = 0;
    for (const OutputEntry& o : GraphView(step_graph).outputs)
      params += o.grad_of >= 0 && (GraphView(step_graph).node(o.grad_of).flags & kFlagParam);
    REQUIRE(rec->slots.size() == params);
    REQUIRE(rec->slots.size() == 6);
    // The hooks: begin, each slot ready exactly once, every wait after its ready, finish last.
    REQUIRE(rec->events.front().first == "begin");
    REQUIRE(rec->events.back().first == "finish");
    std::map<int, int> ready_at;
    for (std::size_t i = 0; i < rec->events.size(); ++i) {
      const auto& [what, k] = rec->events[i];
      if (what == "ready") {
        CHECK(ready_at.count(k) == 0);
        ready_at[k] = static_cast<int>(i);
      } else if (what == "wait") {
        INFO("slot " << k);
        CHECK(ready_at.count(k) == 1);
      }
    }
    CHECK(ready_at.size() == rec->slots.size());
    // The optimizer reads the gradients: someone waited for each.
    for (std::size_t k = 0; k < rec->slots.size(); ++k) {
      INFO("slot " << k);
      CHECK(std::count(rec->events.begin(), rec->events.end(),
                       std::pair<std::string, int>("wait", static_cast<int>(k))) >= 1);
    }
    // What was handed over is the final gradient, and the step's results are unchanged.
    for (const auto& [k, values] : rec->at_ready) {
      const std::string name =
          GraphView(step_graph).name(rec->slots[static_cast<std::size_t>(k)].node);
      INFO(name);
      const Array g = plain.get(name);
      CHECK(std::memcmp(values.data(), g.raw(), g.bytes()) == 0);
    }
    for (const auto& [name, a] : plain.params()) {
      INFO(name);
      CHECK(std::memcmp(a.raw(), synced.params().at(name).raw(), a.bytes()) == 0);
    }
  }
}

TEST_CASE("the all-reduce sync scales this rank's gradients by its share (a world of one)",
          "[dist]") {
  const auto one = Communicator::single();
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO((sched == Schedule::parallel ? "parallel" : "sequential"));
    auto sync = std::make_shared<AllReduceSync>(*one, 256);  // several buckets
    sync->set_share(0.5f);
    const auto plain_run = run_step(sched, nullptr), half_run = run_step(sched, sync);
    const Session &plain = *plain_run, &half = *half_run;
    int checked = 0;
    for (const OutputEntry& o : GraphView(step_graph).outputs) {
      if (o.grad_of < 0 || !(GraphView(step_graph).node(o.grad_of).flags & kFlagParam)) continue;
      const std::string name = GraphView(step_graph).name(o.node);
      INFO(name);
      const Array g = plain.get(name), h = half.get(name);
      for (std::int64_t i = 0; i < g.numel(); ++i) REQUIRE(h.at(i) == 0.5 * g.at(i));
      ++checked;
    }
    CHECK(checked == 6);
    // The optimizer saw the halved gradients: the gradient norm is half.
    CHECK(half.get("grad_norm").at(0) == Approx(0.5 * plain.get("grad_norm").at(0)).epsilon(1e-6));
  }
}

}  // namespace

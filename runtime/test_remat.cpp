// Rematerialisation under SessionOptions::memory_budget: the rewrite's shape (clones after the
// session's nodes, read only by the backward pass), bitwise-equal training steps at half the
// natural arena (fused and unfused attention, dropout on, both schedules, AdamW over several
// steps, AdamW updating in the backward pass), and the error for a budget that cannot be met, whose
// figure is then met exactly.
#include <cstring>
#include <string>

#include "harness.hpp"

#include <stag/runtime/remat.hpp>
#include <stag/runtime/viz/render.hpp>

namespace {
using namespace stag;

constexpr LmConfig kLm{.vocab = 61,
                       .d_model = 32,
                       .heads = 4,
                       .kv_heads = 2,
                       .d_ff = 96,
                       .layers = 3,
                       .dropout = 0.1,
                       .rope_theta = 1e4,
                       .tie_embeddings = true};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto lm_unfused = model([](Builder& g) {
  g.fuse_attention = false;  // the softmax chain: probabilities, masks, dropout of weights
  return language_model<kLm>(g);
});
constexpr auto lm_step = train_step<lm, AdamW{.weight_decay = 0.01}>();
constexpr auto lm_unfused_step = train_step<lm_unfused, AdamW{.weight_decay = 0.01}>();
// Each parameter updated as soon as its gradient is final: recomputation and the early updates
// share the backward pass.
constexpr auto lm_ib_step = train_step<lm, AdamW{.weight_decay = 0.01, .in_backward = true}>();
constexpr auto lm_grad = grad<lm_unfused>();

NamedArrays batch_inputs(std::int64_t b, std::int64_t s, std::uint64_t seed, bool optimizer) {
  NamedArrays in{{"ids", th::random_array(DType::i32, {b, s}, seed, 0, kLm.vocab)},
                 {"targets", th::random_array(DType::i32, {b, s}, seed + 1, 0, kLm.vocab)}};
  if (optimizer) {
    in["lr"] = Array::from<float>({}, {0.01f});
    in["step"] = Array::from<float>({}, {1.0f});
  }
  return in;
}

bool same_bytes(const Array& a, const Array& b) {
  return a.dims() == b.dims() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

std::int64_t natural_peak(const GraphView& g, const NamedArrays& in) {
  Session s(g, {.threads = 2, .seed = 3});
  s.set_inputs(in);
  s.run({.training = true, .step = 1});
  return s.plan().arena_bytes();
}

}  // namespace

TEST_CASE("the recompute rewrite clones forward values for their backward readers only",
          "[remat]") {
  const GraphView g = lm_grad;
  // Recompute every rms_norm of the forward pass.
  std::vector<char> pick(static_cast<std::size_t>(g.size()), 0);
  int picked = 0;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).op == op::rms_norm && !(g.node(n).flags & kFlagBackward)) {
      pick[static_cast<std::size_t>(n)] = 1;
      ++picked;
    }
  REQUIRE(picked == 2 * kLm.layers + 1);
  const auto rg = rewrite_for_recompute(g, pick);
  const GraphView& r = rg->view;
  REQUIRE(r.size() > g.size());
  REQUIRE(static_cast<int>(rg->order.size()) == r.size());
  std::vector<int> pos(static_cast<std::size_t>(r.size()), -1);
  for (std::size_t i = 0; i < rg->order.size(); ++i)
    pos[static_cast<std::size_t>(rg->order[i])] = static_cast<int>(i);
  int clones = 0;
  for (int n = 0; n < r.size(); ++n) {
    const Node& nd = r.node(n);
    REQUIRE(pos[static_cast<std::size_t>(n)] >= 0);
    for (int k = 0; k < nd.nin; ++k)  // inputs run first
      REQUIRE(pos[static_cast<std::size_t>(nd.in[k])] < pos[static_cast<std::size_t>(n)]);
    if (n < g.size()) {
      for (int k = 0; k < nd.nin; ++k) {
        const bool reads_clone = nd.in[k] >= g.size();
        // Only the backward pass reads clones; forward nodes read what they read before.
        if (!(nd.flags & (kFlagBackward | kFlagOptimizer))) CHECK(!reads_clone);
        if (!reads_clone) CHECK(nd.in[k] == g.node(n).in[k]);
      }
      continue;
    }
    ++clones;
    CHECK((nd.flags & kFlagRecompute) != 0);
    CHECK(r.name(n).rfind("recompute/", 0) == 0);
  }
  // The norms, plus views of them that the backward pass reads.
  CHECK(clones >= picked);
  // A clone runs after the whole forward pass (just before its first reader).
  for (int n = g.size(); n < r.size(); ++n)
    CHECK(pos[static_cast<std::size_t>(n)] > pos[static_cast<std::size_t>(g.result)]);
}

TEST_CASE("a training step at half its natural arena gives bitwise the same values", "[remat]") {
  struct Case {
    const char* name;
    GraphView g;
  };
  for (const Case& c :
       {Case{"fused attention", lm_step}, Case{"unfused attention", lm_unfused_step},
        Case{"updates in the backward pass", lm_ib_step}})
    for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
      INFO(c.name << (sched == Schedule::parallel ? ", parallel" : ", sequential"));
      const NamedArrays in = batch_inputs(8, 48, 21, true);
      const std::int64_t natural = natural_peak(c.g, in);
      const std::int64_t budget = natural / 2;
      Session plain(c.g, {.threads = 2, .schedule = sched, .seed = 3});
      Session tight(c.g, {.threads = 2,
                          .schedule = sched,
                          .poison_freed = sched == Schedule::sequential,
                          .seed = 3,
                          .memory_budget = budget});
      for (int step = 1; step <= 3; ++step) {
        NamedArrays si = in;
        si["step"] = Array::from<float>({}, {static_cast<float>(step)});
        for (Session* s : {&plain, &tight}) {
          s->set_inputs(si);
          s->run({.training = true, .step = static_cast<std::uint64_t>(step)});
        }
        INFO("step " << step << "\n" << tight.plan().recompute.describe(tight.plan().graph));
        REQUIRE(plain.plan().arena_bytes() == natural);
        REQUIRE(tight.plan().arena_bytes() <= budget);
        CHECK(tight.plan().recompute.natural_peak == natural);
        CHECK(!tight.plan().recompute.nodes.empty());
        CHECK(tight.plan().recompute.extra_flops > 0);
        CHECK(tight.result() == plain.result());
        for (const OutputEntry& o : GraphView(c.g).outputs) {
          INFO(o.name);
          CHECK(same_bytes(tight.get(o.node), plain.get(o.node)));
        }
      }
      // AdamW has updated the weights three times from the same gradients.
      for (const auto& [name, value] : plain.params()) {
        INFO(name);
        CHECK(same_bytes(tight.params().at(name), value));
      }
    }
}

TEST_CASE("recomputed nodes appear in the kernel list, the profile and the picture", "[remat]") {
  const NamedArrays in = batch_inputs(4, 32, 5, false);
  const std::int64_t natural = natural_peak(lm_grad, in);
  Session s(lm_grad, {.threads = 1, .profile = true, .seed = 3, .memory_budget = natural * 3 / 5});
  s.set_inputs(in);
  s.run({.training = true, .step = 1});
  CHECK(s.describe_kernels().find("recompute/") != std::string::npos);
  CHECK(s.profile_report(10000).find("recompute/") != std::string::npos);
  const std::string report = s.plan().recompute.describe(s.plan().graph);
  CHECK(report.find("recomputes ") == 0);
  CHECK(report.find("budget") != std::string::npos);
  // The plan's graph drawn: clones in the backward box, in their own style and legend entry.
  const std::string dot = to_dot(s.plan().graph, dot_options());
  CHECK(dot.find(">recomputed<") != std::string::npos);
  CHECK(dot.find("#fef5e7") != std::string::npos);
  CHECK(to_dot(GraphView(lm_grad), dot_options()).find(">recomputed<") == std::string::npos);
}

TEST_CASE("a budget at or above the natural arena changes nothing", "[remat]") {
  const NamedArrays in = batch_inputs(4, 16, 9, false);
  const std::int64_t natural = natural_peak(lm_grad, in);
  Session s(lm_grad, {.threads = 2, .seed = 3, .memory_budget = natural});
  s.set_inputs(in);
  s.run({.training = true, .step = 1});
  CHECK(s.plan().arena_bytes() == natural);
  CHECK(s.plan().recompute.nodes.empty());
  CHECK(s.plan().rewritten == nullptr);
}

TEST_CASE("a budget that cannot be met names the smallest arena, and that one is met", "[remat]") {
  const NamedArrays in = batch_inputs(8, 32, 13, true);
  Session s(lm_step, {.threads = 2, .seed = 3, .memory_budget = 4096});
  s.set_inputs(in);
  std::string what;
  try {
    s.run({.training = true, .step = 1});
  } catch (const Error& e) {
    what = e.what();
  }
  INFO(what);
  REQUIRE(what.find("memory budget of 0.0 MiB (4096 bytes) cannot be met") != std::string::npos);
  // The step holds every gradient until the optimizer: the message says what would lower that.
  CHECK(what.find("(AdamW{.in_backward = true}) so that gradients are not all held") !=
        std::string::npos);
  const std::string key = "give a budget of at least ";
  const std::size_t at = what.find(key);
  REQUIRE(at != std::string::npos);
  const std::int64_t smallest = std::stoll(what.substr(at + key.size()));
  CHECK(smallest > 4096);
  CHECK(smallest < natural_peak(lm_step, in));
  // The session still works with a budget it can meet, and the figure named is one.
  Session ok(lm_step, {.threads = 2, .seed = 3, .memory_budget = smallest});
  ok.set_inputs(in);
  ok.run({.training = true, .step = 1});
  CHECK(ok.plan().arena_bytes() <= smallest);
}

TEST_CASE("the fused attention is recomputed under a tight budget, with bitwise the same values",
          "[remat]") {
  const NamedArrays in = batch_inputs(8, 48, 17, true);
  // The smallest arena the search finds, which recomputes the output of an attention too.
  std::int64_t smallest = 0;
  try {
    Session probe(lm_step, {.threads = 2, .seed = 3, .memory_budget = 4096});
    probe.set_inputs(in);
    probe.run({.training = true, .step = 1});
  } catch (const Error& e) {
    const std::string what = e.what(), key = "give a budget of at least ";
    const std::size_t at = what.find(key);
    REQUIRE(at != std::string::npos);
    smallest = std::stoll(what.substr(at + key.size()));
  }
  REQUIRE(smallest > 0);
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO((sched == Schedule::parallel ? "parallel" : "sequential"));
    Session plain(lm_step, {.threads = 2, .schedule = sched, .seed = 3});
    Session tight(lm_step, {.threads = 2,
                            .schedule = sched,
                            .poison_freed = sched == Schedule::sequential,
                            .seed = 3,
                            .memory_budget = smallest});
    for (int step = 1; step <= 2; ++step) {
      NamedArrays si = in;
      si["step"] = Array::from<float>({}, {static_cast<float>(step)});
      for (Session* s : {&plain, &tight}) {
        s->set_inputs(si);
        s->run({.training = true, .step = static_cast<std::uint64_t>(step)});
      }
      const Plan& p = tight.plan();
      INFO(p.recompute.describe(p.graph));
      REQUIRE(p.arena_bytes() <= smallest);
      int attention = 0;
      for (int n : p.recompute.nodes) attention += p.graph.node(n).op == op::attention;
      CHECK(attention >= 1);
      // The backward kernels found the clones' saved row statistics (they did not compute
      // them again), and every value is bitwise the plain step's.
      const std::string kernels = tight.describe_kernels();
      CHECK(kernels.find("recompute/") != std::string::npos);
      CHECK(kernels.find("row statistics recomputed") == std::string::npos);
      CHECK(tight.result() == plain.result());
      for (const OutputEntry& o : GraphView(lm_step).outputs) {
        INFO(o.name);
        CHECK(same_bytes(tight.get(o.node), plain.get(o.node)));
      }
    }
    for (const auto& [name, value] : plain.params()) {
      INFO(name);
      CHECK(same_bytes(tight.params().at(name), value));
    }
  }
}

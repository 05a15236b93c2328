// The CPU session against the reference evaluator on a multi-layer attention model, plan
// caching per binding, primitive reuse, memory plan validity and schedule independence.
#include <cstdlib>
#include <cstring>

#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int D = 32, H = 4;

template <int Out, class S>
constexpr auto dense(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  return matmul(x, param<Shape<in, Out>>(s, "weight")) + param<Shape<Out>>(s, "bias", kZeros);
}

template <class X, class K>
constexpr auto layer(Scope s, X x, K keep) {
  auto guard = s.enter();
  auto heads = [&](auto t) { return transpose<1, 2>(view<batch, seq, H, D / H>(t)); };
  auto q = heads(dense<D>(s / "q", x)), k = heads(dense<D>(s / "k", x)),
       v = heads(dense<D>(s / "v", x));
  auto p = softmax<-1>(matmul_nt(q, k) * 0.35, unsqueeze<1>(unsqueeze<1>(keep)));
  auto h = x + dense<D>(s / "o", view<batch, seq, D>(transpose<1, 2>(matmul(p, v))));
  return h + dense<D>(s / "ff2", gelu(dense<2 * D>(s / "ff1", h)));
}

// Three layers; `fused`: the attention chain becomes the fused attention op, whose CPU kernel
// hands the row statistics and dk, dv from one kernel to the next through buffers the
// session's plans share. Unfused, the chain's kernels (masked softmax) are under test.
template <bool fused>
constexpr auto three_layers(Builder& g) {
  g.fuse_attention = fused;
  auto x = input<"x", Shape<batch, seq, D>>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  Tensor<Shape<batch, seq, D>> h = x;
  for (int l = 0; l < 3; ++l) h = layer(g / "layer" / l, h, keep);
  return mean<0, 1, 2>(h * h);
}
constexpr auto net = model([](Builder& g) { return three_layers<false>(g); });
constexpr auto train = grad<net>();
constexpr auto net_fused = model([](Builder& g) { return three_layers<true>(g); });
constexpr auto train_fused = grad<net_fused>();
static_assert(train_fused.count(op::attention) == 3 && train.count(op::attention) == 0);

NamedArrays inputs(std::int64_t b, std::int64_t s, std::uint64_t seed) {
  return {{"x", th::random_array(DType::f32, {b, s, D}, seed)},
          {"keep", th::random_array(DType::boolean, {b, s}, seed + 1)}};
}

TEST_CASE("session matches the reference on a 3-layer attention model, forward and backward",
          "[session]") {
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    Session s(train, {.threads = 2,
                      .schedule = sched,
                      .poison_freed = sched == Schedule::sequential,
                      .seed = 5});
    for (auto [b, l] : {std::pair{2, 7}, std::pair{3, 5}}) {
      const NamedArrays in = inputs(b, l, 11);
      s.set_inputs(in);
      s.run();
      const Evaluation ref = evaluate_reference(train, in, s.params());
      CHECK(std::abs(s.result() - ref.result().at(0)) <=
            1e-5 * std::max(1.0, std::abs(ref.result().at(0))));
      for (const OutputEntry& o : GraphView(train).outputs)
        th::require_close(s.get(o.node), ref.node(o.node), 2e-5);
    }
    CHECK(s.num_plans() == 2);
  }
}

TEST_CASE("plans of several lengths alternate, fused attention's buffers shared between them",
          "[session]") {
  Session s(train_fused, {.threads = 2, .seed = 6});
  for (std::int64_t len : {16, 64, 40, 64, 16, 40}) {
    INFO("length " << len);
    const NamedArrays in = inputs(2, len, 40 + static_cast<std::uint64_t>(len));
    s.set_inputs(in);
    s.run();
    CHECK(s.describe_kernels().find("own attention") != std::string::npos);
    const Evaluation ref = evaluate_reference(train_fused, in, s.params());
    CHECK(std::abs(s.result() - ref.result().at(0)) <=
          1e-5 * std::max(1.0, std::abs(ref.result().at(0))));
    for (const OutputEntry& o : GraphView(train_fused).outputs)
      th::require_close(s.get(o.node), ref.node(o.node), 2e-5);
  }
  CHECK(s.num_plans() == 3);
}

TEST_CASE("steady-state steps create no primitives and reuse the plan", "[session]") {
  Session s(train, {.threads = 2});
  s.set_inputs(inputs(2, 9, 3));
  s.run();
  const std::int64_t created = primitive_creations().load();
  for (int i = 0; i < 3; ++i) s.run();
  CHECK(primitive_creations().load() == created);
  CHECK(s.num_plans() == 1);
  s.set_inputs(inputs(2, 6, 3));  // a new binding makes a new plan (in the same arena)
  s.run();
  CHECK(s.num_plans() == 2);
  CHECK(primitive_creations().load() > created);
}

TEST_CASE("the plan cache keeps at most max_plans plans, dropping the least recently used",
          "[session]") {
  Session s(train, {.threads = 2, .seed = 4, .max_plans = 2});
  auto run_len = [&](std::int64_t len) {
    const NamedArrays in = inputs(2, len, 20 + static_cast<std::uint64_t>(len));
    s.set_inputs(in);
    s.run();
    const Evaluation ref = evaluate_reference(train, in, s.params());
    CHECK(std::abs(s.result() - ref.result().at(0)) <=
          1e-5 * std::max(1.0, std::abs(ref.result().at(0))));
  };
  run_len(11);  // the largest first, so that no later plan replaces the shared arena
  run_len(3);
  run_len(4);  // evicts 11
  const std::int64_t two = primitive_creations().load();
  run_len(3);  // cached: nothing new; 3 is now the most recent
  CHECK(primitive_creations().load() == two);
  run_len(5);  // evicts 4, the least recently used
  CHECK(s.num_plans() == 2);
  const std::int64_t three = primitive_creations().load();
  run_len(3);  // still cached
  CHECK(primitive_creations().load() == three);
  run_len(4);  // was dropped: planned again
  CHECK(primitive_creations().load() > three);
  CHECK(s.num_plans() == 2);
  for (std::int64_t len = 6; len < 12; ++len) run_len(len);
  CHECK(s.num_plans() == 2);
  CHECK(s.arena_bytes() == static_cast<std::size_t>((s.plan().arena_bytes() + 63) / 64 * 64));
}

TEST_CASE("a session's plans share one arena, the largest plan's", "[session]") {
  Session s(train, {.threads = 2, .seed = 4});
  auto run_len = [&](std::int64_t len) {
    const NamedArrays in = inputs(16, len, 30 + static_cast<std::uint64_t>(len));
    s.set_inputs(in);
    s.run();
    const Evaluation ref = evaluate_reference(train, in, s.params());
    CHECK(std::abs(s.result() - ref.result().at(0)) <=
          1e-5 * std::max(1.0, std::abs(ref.result().at(0))));
    return s.plan().arena();
  };
  // Longest first: the arena is allocated once and every later plan fits in it.
  std::byte* const arena = run_len(64);
  const std::size_t biggest = s.arena_bytes();
  CHECK(biggest >= static_cast<std::size_t>(s.plan().arena_bytes()));
  for (std::int64_t len = 56; len >= 8; len -= 8) {
    CHECK(run_len(len) == arena);
    CHECK(s.plan().arena_bytes() < static_cast<std::int64_t>(biggest));
  }
  CHECK(s.num_plans() == 8);
  CHECK(s.arena_bytes() == biggest);
  // Cached plans run again, correctly, after others overwrote the arena.
  const std::int64_t made = primitive_creations().load();
  for (std::int64_t len : {24, 64, 8}) CHECK(run_len(len) == arena);
  CHECK(primitive_creations().load() == made);
  // A longer batch needs a larger arena: the plans pointing into the old one are dropped.
  run_len(96);
  CHECK(s.num_plans() == 1);
  CHECK(s.arena_bytes() > biggest);
  CHECK(s.arena_bytes() == static_cast<std::size_t>((s.plan().arena_bytes() + 63) / 64 * 64));
  run_len(64);  // planned again, into the new arena
  CHECK(s.num_plans() == 2);
}

TEST_CASE("the memory plan never overlaps live buffers and reuses memory", "[session]") {
  Session s(train, {.threads = 2});
  s.set_inputs(inputs(4, 16, 3));
  s.run();
  const Plan& p = s.plan();
  std::vector<BufferReq> reqs;
  for (const PlanBuffer& b : p.buffers) reqs.push_back(b.req);
  CHECK(plan_is_valid(reqs, p.memory));
  CHECK(p.memory.peak < p.memory.naive);
  INFO(s.describe_kernels());
  CHECK(s.describe_kernels().find("onednn matmul") != std::string::npos);
}

TEST_CASE("results do not depend on the schedule", "[session]") {
  const NamedArrays in = inputs(3, 8, 21);
  Session seq_s(train, {.threads = 2, .schedule = Schedule::sequential, .seed = 9});
  Session par_s(train, {.threads = 2, .schedule = Schedule::parallel, .seed = 9});
  seq_s.set_inputs(in);
  par_s.set_inputs(in);
  seq_s.run();
  par_s.run();
  CHECK(seq_s.result() == par_s.result());  // bitwise
  const Array a = seq_s.get("grad/layer.1.q.weight"), b = par_s.get("grad/layer.1.q.weight");
  CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

}  // namespace

namespace {
TEST_CASE("kernel choices are printable", "[session]") {
  Session s(train, {.threads = 2});
  s.set_inputs(inputs(2, 6, 3));
  s.run();
  const std::string k = s.describe_kernels();
  CHECK(k.find("onednn matmul") != std::string::npos);
  CHECK(k.find("own masked softmax") != std::string::npos);
  CHECK(k.find("onednn softmax backward") != std::string::npos);
  CHECK(k.find("onednn eltwise") != std::string::npos);
  CHECK(k.find("onednn binary") != std::string::npos);
}
}  // namespace

namespace {
constexpr auto adam_step = train_step<net, AdamW{}>();

std::vector<double> train_losses(std::uint64_t seed) {
  Session s(adam_step, {.threads = 2, .seed = seed});
  std::vector<double> losses;
  for (int t = 1; t <= 5; ++t) {
    NamedArrays in = inputs(3, 6, 40 + t);
    in["lr"] = Array::from<float>({}, {1e-3f});
    in["step"] = Array::from<float>({}, {static_cast<float>(t)});
    s.set_inputs(in);
    s.run({.training = true, .step = static_cast<std::uint64_t>(t)});
    losses.push_back(s.result());
  }
  return losses;
}

TEST_CASE("two training runs with the same seed and threads give bitwise-equal losses",
          "[session]") {
  const std::vector<double> a = train_losses(7), b = train_losses(7), c = train_losses(8);
  CHECK(a == b);  // bitwise: exact double comparison
  CHECK(a != c);
  CHECK(a.front() != a.back());  // the model does train
}

// The session validates inputs with the same code as the reference evaluator: same messages.
std::string session_error(const NamedArrays& in) {
  try {
    Session s(net, {.threads = 1});
    s.set_inputs(in);
    s.run();
  } catch (const stag::Error& e) {
    return e.what();
  }
  return "";
}
std::string reference_error(const NamedArrays& in) {
  try {
    evaluate_reference(net, in, make_params(net, {}, 1));
  } catch (const stag::Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("bad inputs give the reference evaluator's messages through a session", "[session]") {
  std::vector<NamedArrays> bad;
  NamedArrays in = inputs(2, 5, 1);
  in["keep"] = th::random_array(DType::f32, {2, 5}, 2);  // wrong dtype
  bad.push_back(in);
  in = inputs(2, 5, 1);
  in["x"] = th::random_array(DType::f32, {2, 5, D, 1}, 2);  // wrong rank
  bad.push_back(in);
  in = inputs(2, 5, 1);
  in["x"] = th::random_array(DType::f32, {2, 5, D + 1}, 2);  // static dim
  bad.push_back(in);
  in = inputs(2, 5, 1);
  in["keep"] = th::random_array(DType::boolean, {2, 6}, 2);  // one symbol, two values
  bad.push_back(in);
  in = inputs(2, 5, 1);
  in.erase("keep");  // missing
  bad.push_back(in);
  for (const NamedArrays& b : bad) {
    const std::string s = session_error(b), r = reference_error(b);
    INFO(r);
    CHECK(!s.empty());
    CHECK(s == r);
  }
}
}  // namespace

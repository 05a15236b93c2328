// The CUDA backend. [cuda]: what runs without a GPU (the op table's refusals, the no-GPU
// message, the matmul batch planning). [gpu]: a whole training step against the reference and
// the CPU, bitwise determinism, and a bad token id; these run only under ctest label `cuda`
// (tests/cuda/run.sh), which reports them as skipped where no GPU is.
#include <cstring>

#include "harness.hpp"

#ifdef STAG_HAVE_CUDA
#include <stag/runtime/cuda/kernels.hpp>
#endif

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr int D = 16, H = 2, V = 50;

template <int Out, class S>
constexpr auto dense(Scope s, Tensor<S> x) {
  constexpr int in = static_cast<int>(S::value.dims[S::rank - 1].coef);
  return matmul(x, param<Shape<in, Out>>(s, "weight")) + param<Shape<Out>>(s, "bias", kZeros);
}

// A small encoder classifier: embedding, masked softmax attention (the op chain, or with Fuse
// the fused attention op with a dense keep mask), layer norm, GELU MLP, mean pool, cross-entropy;
// with DropPct, dropout on the attention weights and after the MLP.
template <bool Fuse, int DropPct = 0>
constexpr auto encoder = model([](Builder& g) {
  g.fuse_attention = Fuse;
  auto ids = input<"ids", Shape<batch, seq>, i32>(g);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(g);
  auto labels = input<"labels", Shape<batch>, i32>(g);
  auto x = embedding(ids, param<Shape<V, D>>(g / "tok", "weight", kEmbeddingInit)).named("tok");
  auto heads = [&](auto t) { return transpose<1, 2>(view<batch, seq, H, D / H>(t)); };
  auto q = heads(dense<D>(g / "q", x)), k = heads(dense<D>(g / "k", x)),
       v = heads(dense<D>(g / "v", x));
  auto p = softmax<-1>(matmul_nt(q, k) * 0.35, unsqueeze<1>(unsqueeze<1>(keep)));
  if constexpr (DropPct > 0) p = dropout(p, DropPct / 100.0);
  auto h = layer_norm(x + dense<D>(g / "o", view<batch, seq, D>(transpose<1, 2>(matmul(p, v)))),
                      param<Shape<D>>(g / "ln", "weight", kOnes),
                      param<Shape<D>>(g / "ln", "bias", kZeros));
  h = h + dense<D>(g / "ff2", gelu(dense<2 * D>(g / "ff1", h)));
  if constexpr (DropPct > 0) h = dropout(h, DropPct / 100.0);
  auto logits = dense<3>(g / "head", mean<1>(h));
  return cross_entropy(logits, labels);
});
constexpr auto train = train_step<encoder<false>, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();

NamedArrays batch_inputs(std::int64_t b, std::int64_t s, std::uint64_t seed) {
  Array ids(DType::i32, {b, s}), labels(DType::i32, {b});
  for (std::int64_t i = 0; i < b * s; ++i)
    ids.set(i, static_cast<double>(random::bits(seed, 0, 1, static_cast<std::uint64_t>(i)) % V));
  for (std::int64_t i = 0; i < b; ++i)
    labels.set(i, static_cast<double>(random::bits(seed, 0, 2, static_cast<std::uint64_t>(i)) % 3));
  Array keep(DType::boolean, {b, s});
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t j = 0; j < s; ++j) keep.set(i * s + j, j < s - i % 3 ? 1 : 0);
  return {{"ids", ids},
          {"keep", keep},
          {"labels", labels},
          {"lr", Array::from<float>({}, {1e-2f})},
          {"step", Array::from<float>({}, {1.f})}};
}

TEST_CASE("a CUDA session where no GPU can run says why", "[cuda]") {
  std::string why;
  if (cuda_available(&why)) {
    SUCCEED("a GPU is present: the [gpu] tests cover it");
    return;
  }
  INFO(why);
  CHECK_THROWS_WITH(Session(train, {.device = Device::cuda}),
                    Catch::Contains("stag: device cuda cannot run here: "));
}

// score_mod / mask_mod are host code: the CUDA attention kernel refuses them at plan time.
constexpr auto softcap_mod = [](auto s, auto...) { return 2.0 * tanh(s / 2.0); };
constexpr auto modded = model([](Builder& g) {
  auto q = input<"q", Shape<2, 2, 5, 8>>(g);
  return sum<0, 1, 2, 3>(sdpa(q, q, q, score_mod<"softcap">(softcap_mod)));
});

TEST_CASE("a node the GPU backend cannot run is refused, naming the node and the op", "[cuda]") {
  const std::string why = device_unsupported(Device::cuda_interpret, modded);
  CHECK_THAT(why, Catch::StartsWith("stag: cuda cannot run node '") &&
                      Catch::Contains("' (op attention): score_mod / mask_mod are compiled for "
                                      "the host"));
  CHECK_THROWS_WITH(Session(modded, {.device = Device::cuda_interpret}), why);
  static constexpr auto fused = train_step<encoder<true>, AdamW{}>();
  static_assert(fused.count(op::attention) == 1);
  CHECK(device_unsupported(Device::cuda_interpret, fused).empty());  // it has kernels now
  CHECK(device_unsupported(Device::cuda_interpret, train).empty());
#ifdef STAG_HAVE_CUDA
  CHECK(device_unsupported(Device::cuda, modded) == why);
#else
  CHECK_THAT(device_unsupported(Device::cuda, modded),
             Catch::Contains("this stag was built without CUDA"));
#endif
  CHECK(device_unsupported(Device::cpu, modded).empty());
}

#ifdef STAG_HAVE_CUDA
TensorView dense_view(std::vector<std::int64_t> dims) {
  TensorView v;
  v.rank = static_cast<int>(dims.size());
  for (int i = 0; i < v.rank; ++i) v.dims[i] = dims[static_cast<std::size_t>(i)];
  v.set_contiguous();
  return v;
}

TEST_CASE("matmul batch dims map onto as few cuBLASLt calls as their strides allow", "[cuda]") {
  SECTION("a weight shared by every batch row folds the batch into M") {
    const cuda::Gemm g =
        cuda::plan_gemm(dense_view({4, 7, 16}), dense_view({16, 5}), dense_view({4, 7, 5}), false);
    CHECK((g.m == 28 && g.n == 5 && g.k == 16 && g.batch == 1 && g.outer_a.size() == 1));
  }
  SECTION("attention scores: batch and heads are one strided batch") {
    const cuda::Gemm g = cuda::plan_gemm(dense_view({2, 3, 7, 8}), dense_view({2, 3, 8, 7}),
                                         dense_view({2, 3, 7, 7}), false);
    CHECK((g.m == 7 && g.batch == 6 && g.stride_a == 56 && g.stride_b == 56 && g.stride_c == 49));
    CHECK(g.outer_a == std::vector<std::int64_t>{0});
  }
  SECTION("broadcast on different dims of each operand loops the outer dim on the host") {
    // [2, 1, 7, 8] x [1, 3, 8, 5]: a repeats over heads (stride 0), b over batch.
    const cuda::Gemm g = cuda::plan_gemm(dense_view({2, 1, 7, 8}), dense_view({1, 3, 8, 5}),
                                         dense_view({2, 3, 7, 5}), false);
    CHECK((g.batch == 3 && g.stride_a == 0 && g.stride_b == 40));
    CHECK(g.outer_a == std::vector<std::int64_t>{0, 56});
    CHECK(g.outer_b == std::vector<std::int64_t>{0, 0});
    CHECK(g.outer_c == std::vector<std::int64_t>{0, 105});
  }
  SECTION("a transposed first operand does not fold") {
    const cuda::Gemm g =
        cuda::plan_gemm(dense_view({4, 16, 7}), dense_view({16, 5}), dense_view({4, 7, 5}), true);
    CHECK((g.m == 7 && g.k == 16 && g.batch == 4 && g.stride_a == 112 && g.stride_b == 0));
  }
}

TEST_CASE("every op has a CUDA kernel or a stated reason, and only sources are never kernels",
          "[cuda]") {
  int kernels = 0, refused = 0;
  for (int i = 0; i < kOpCount; ++i) {
    const cuda::OpSupport& s = cuda::support(static_cast<OpId>(i));
    INFO(op_name(code(static_cast<OpId>(i))));
    CHECK((s.make != nullptr) != (s.unsupported != nullptr));
    (s.make ? kernels : refused) += 1;
  }
  WARN("CUDA kernels for " << kernels << " of " << kOpCount << " ops; " << refused
                           << " refused with a reason");
  CHECK(kernels > refused);
}
#endif

// ---- on a GPU -----------------------------------------------------------------------------

using th::gpu_device;

// Clones: a training graph's reference evaluation updates the params it is given in place.
NamedArrays clones(const NamedArrays& a) {
  NamedArrays c;
  for (const auto& [k, v] : a) c.emplace(k, v.clone());
  return c;
}

void copy_params(Session& to, const Session& from) {
  for (const auto& [k, v] : from.params()) to.set_param(k, v);
}

// One training step of `g` on the CPU and on the GPU from the same parameters: the GPU's loss
// equals the reference's, and its outputs and updated parameters the CPU's.
void check_step(const GraphView& g, Session& cpu, Session& gpu, const NamedArrays& in) {
  copy_params(gpu, cpu);
  const Evaluation ref = evaluate_reference(g, in, clones(cpu.params()));
  cpu.set_inputs(in);
  gpu.set_inputs(in);
  cpu.run({.training = true});
  gpu.run({.training = true});
  const double want = ref.result().at(0);
  CHECK(std::abs(gpu.result() - want) <= 1e-5 * std::max(1.0, std::abs(want)));
  for (const OutputEntry& o : g.outputs) {
    INFO(o.name);
    th::require_close(gpu.get(o.node), cpu.get(o.node), 1e-4);
  }
  for (const auto& [k, v] : cpu.params()) {  // after the AdamW update
    INFO(k);
    th::require_close(gpu.params().at(k), v, 1e-5);
  }
}

TEST_CASE("a training step on the GPU matches the CPU and the reference", "[gpu]") {
  Session cpu(train, {.threads = 2, .seed = 7});
  Session gpu(train, {.device = gpu_device(), .seed = 7});
  for (auto [b, s] : {std::pair{4, 9}, std::pair{3, 13}}) {
    INFO("batch " << b << ", seq " << s);
    check_step(train, cpu, gpu, batch_inputs(b, s, static_cast<std::uint64_t>(b * 100 + s)));
  }
}

TEST_CASE("a training step with the fused attention on the GPU matches the CPU", "[gpu]") {
  static constexpr auto fused =
      train_step<encoder<true>, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();
  static_assert(fused.count(op::attention) == 1 && fused.count(op::attention_backward) == 1);
  Session cpu(fused, {.threads = 2, .seed = 7});
  Session gpu(fused, {.device = gpu_device(), .seed = 7});
  check_step(fused, cpu, gpu, batch_inputs(3, 11, 311));
}

TEST_CASE("the same seed gives bitwise-equal losses and parameters on the GPU", "[gpu]") {
  auto run = [] {
    Session s(train, {.device = gpu_device(), .seed = 3});
    std::vector<double> losses;
    // One batch, five steps: the loss must fall (new random labels every step need not).
    for (int step = 1; step <= 5; ++step) {
      NamedArrays in = batch_inputs(8, 16, 1);
      in["step"] = Array::from<float>({}, {static_cast<float>(step)});
      s.set_inputs(in);
      s.run({.training = true, .step = static_cast<std::uint64_t>(step)});
      losses.push_back(s.result());
    }
    return std::pair{losses, s.params().at("tok.weight").clone()};
  };
  const auto [l1, w1] = run();
  const auto [l2, w2] = run();
  CHECK(l1 == l2);
  CHECK(std::memcmp(w1.raw(), w2.raw(), w1.bytes()) == 0);
  CHECK(l1.back() < l1.front());  // and it learns the batch
}

// CUDA Graphs: the step is captured once per key (training or not) and replayed. The replays
// must draw each step's dropout masks (seed and step are read on the device), so the losses
// and parameters are bitwise those of launching the kernels one by one, and the CPU's.
TEST_CASE("a step captured as a CUDA Graph and replayed gives each step's dropout masks", "[gpu]") {
  static constexpr auto drop =
      train_step<encoder<true, 20>, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();
  // The attention's dropout is fused into it; h's dropout and its gradient are dropout nodes.
  static_assert(drop.count(op::attention) == 1 && drop.count(op::dropout) == 2);
  struct Run {
    std::vector<double> losses;
    Array weight;
    int captured = 0;
    std::int64_t replayed = 0;
    std::string eager_because;
  };
  auto run = [](Device d, bool graphs) {
    Session s(drop, {.device = d, .cuda_graphs = graphs, .threads = 2, .seed = 3});
    Run r;
    for (int step = 1; step <= 5; ++step) {
      NamedArrays in = batch_inputs(4, 9, 1);
      in["step"] = Array::from<float>({}, {static_cast<float>(step)});
      s.set_inputs(in);
      // Step 4 evaluates (no dropout, no update: another key, captured once more).
      const bool training = step != 4;
      s.run({.training = training, .step = static_cast<std::uint64_t>(step)});
      r.losses.push_back(s.result());
    }
    r.weight = s.params().at("ff1.weight").clone();
    if (const DevicePlanState* st = s.plan().device_state()) {
      r.captured = st->captured;
      r.replayed = st->replayed;
      r.eager_because = st->eager_because;
    }
    return r;
  };
  const Run graphed = run(gpu_device(), true), eager = run(gpu_device(), false),
            cpu = run(Device::cpu, true);
  CHECK(graphed.captured == 2);  // a training step and an evaluation step
  CHECK(graphed.replayed == 3);  // steps 2, 3 and 5
  CHECK(graphed.eager_because.empty());
  CHECK(eager.captured == 0);
  CHECK(eager.eager_because == "CUDA Graphs are off (SessionOptions::cuda_graphs)");
  CHECK(graphed.losses == eager.losses);
  CHECK(std::memcmp(graphed.weight.raw(), eager.weight.raw(), eager.weight.bytes()) == 0);
  for (std::size_t i = 0; i < cpu.losses.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(std::abs(graphed.losses[i] - cpu.losses[i]) <= 1e-5 * std::max(1.0, cpu.losses[i]));
  }
  th::require_close(graphed.weight, cpu.weight, 1e-5);
}

// stag::autocast: every matmul reads bf16 operands (cast on the device) and gives f32; the
// norms, softmax, loss and optimizer stay f32. The device's products accumulate bf16 operands in
// f32 (cuBLASLt) or double (the interpret mode's host GEMM), the CPU's in f32 (oneDNN), so
// they agree to f32 rounding of the same bf16 inputs.
TEST_CASE("an autocast (bf16 matmul) training step on the GPU matches the CPU", "[gpu]") {
  static constexpr auto enc16 = autocast<encoder<false>>();
  static constexpr auto train16 =
      train_step<enc16, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();
  Session cpu(train16, {.threads = 2, .seed = 7});
  Session gpu(train16, {.device = gpu_device(), .seed = 7});
  const NamedArrays in = batch_inputs(3, 7, 307);
  copy_params(gpu, cpu);
  cpu.set_inputs(in);
  gpu.set_inputs(in);
  for (int step = 0; step < 3; ++step) {
    INFO("step " << step + 1);
    cpu.run({.training = true});
    gpu.run({.training = true});
    CHECK(std::abs(gpu.result() - cpu.result()) <= 1e-5 * std::max(1.0, std::abs(cpu.result())));
  }
  for (const auto& [k, v] : cpu.params()) {
    INFO(k);
    th::require_close(gpu.params().at(k), v, 1e-4);
  }
}

// A step whose launches a capture cannot hold (here a synchronisation) runs its kernels one by
// one, and says why.
TEST_CASE("a step that cannot be captured as a CUDA Graph runs eagerly and says why", "[gpu]") {
  const std::shared_ptr<DeviceBackend> dev = device_backend(gpu_device());
  const auto state = dev->plan_state(train, train.size(), false, true);
  int ran = 0;
  auto step = [&] {
    ++ran;
    dev->synchronize();
  };
  dev->run_step(*state, {}, step);
  CHECK(ran == 2);  // the capture's try, then eagerly
  CHECK(state->captured == 0);
  CHECK_THAT(state->eager_because,
             Catch::StartsWith("the step could not be captured as a CUDA Graph: ") &&
                 Catch::Contains("cudaErrorStreamCaptureUnsupported"));
  dev->run_step(*state, {}, step);
  CHECK(ran == 3);     // no second try
  dev->synchronize();  // and the stream works
}

TEST_CASE("a bad token id on the GPU gives the CPU's error and changes no parameter", "[gpu]") {
  Session gpu(train, {.device = gpu_device(), .seed = 5});
  NamedArrays in = batch_inputs(2, 6, 1);
  gpu.set_inputs(in);
  gpu.run({.training = true});
  const Array before = gpu.params().at("tok.weight").clone();
  in["ids"].set(1 * 6 + 4, V + 3);
  gpu.set_inputs(in);
  const std::string msg = "stag: embedding 'tok': token id 53 at [1, 4] is outside [0, 50)";
  CHECK_THROWS_WITH(gpu.run({.training = true}), msg);
  CHECK_THROWS_WITH(evaluate_reference(train, in, clones(gpu.params())), msg);
  const Array after = gpu.params().at("tok.weight");
  CHECK(std::memcmp(before.raw(), after.raw(), before.bytes()) == 0);
  in["ids"].set(1 * 6 + 4, 0);  // and the session still works
  gpu.set_inputs(in);
  CHECK_NOTHROW(gpu.run({.training = true}));
}

}  // namespace

// stag-bench: times the benchmark models (bench_models.hpp) and prints one line per figure,
// `bench.<config>.<metric>: <value> <unit>`. Without --config it runs every config, each mode
// (train, infer) in its own child process so that peak RSS is per config and mode. A new figure
// is one more print() call in run_train / run_infer; bench.sh and docs/benchmarks.md list them.
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_models.hpp"

#include <stag/runtime/onnx/export.hpp>
#include <stag/runtime/trace.hpp>
#include <stag/stag.hpp>

namespace {
using namespace stag;

struct Options {
  std::string config = "all";  // all, peak, cls, tf, gpt
  std::string export_onnx;     // a folder: write <config>.onnx and its inputs, time nothing
  std::string trace;           // a Chrome trace-event file of the first 20 runs
  std::string mode = "both";   // both, train, infer
  int threads = 2;             // TBB arena and own kernels
  int omp = 0;                 // OpenMP threads (oneDNN); 0: the same as threads
  Schedule schedule = Schedule::sequential;
  int steps = 15;          // timed steps (the median is reported)
  int warmup = 3;          // untimed steps first (the first one also plans)
  std::string label;       // with a label, metrics are named <config>.schedule.<label>.<metric>
  int profile = 0;         // > 0: time every node and print the slowest `profile` ones
  double bucket_mib = 25;  // data parallelism: gradient bucket size
  Device device = Device::cpu;
  bool tf32 = false;             // --device cuda: TF32 matmuls
  bool cuda_graphs = true;       // --no-cuda-graphs: launch the kernels one by one
  double memory_budget_mib = 0;  // > 0: the arena's budget (recomputation, runtime/remat.hpp)
  bool in_backward = false;      // the training step with AdamW{.in_backward = true}
};

double now_ms() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void print(const Options& o, const std::string& config, const std::string& metric, double value,
           const char* unit) {
  const std::string name = o.label.empty() ? metric : "schedule." + o.label + "." + metric;
  std::printf("bench.%s.%s: %.*f %s\n", config.c_str(), name.c_str(), value < 10 ? 3 : 1, value,
              unit);
  std::fflush(stdout);
}

double rss_peak_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Matmul FLOPs of one step, read from the graph and the plan's bound symbols:
// 2 * (elements of the output) * K for every matmul node that the plan executes (recomputed
// ones too: the plan's graph).
double matmul_flops(const Plan& p) {
  const GraphView& g = p.graph;
  double flops = 0;
  for (int n : p.order) {
    if (g.node(n).op != op::matmul) continue;
    const std::vector<std::int64_t> out = concrete_dims(g.shape(n), p.bindings);
    const std::vector<std::int64_t> a = concrete_dims(g.shape(g.node(n).in[0]), p.bindings);
    const bool trans_a = g.attr(n).i[0] != 0;
    const std::int64_t k = a[a.size() - (trans_a ? 2 : 1)];
    double elems = 1;
    for (std::int64_t d : out) elems *= static_cast<double>(d);
    flops += 2.0 * elems * static_cast<double>(k);
  }
  return flops;
}

double params_mib(const Session& s) {
  double bytes = 0;
  for (const auto& [name, a] : s.params()) bytes += static_cast<double>(a.bytes());
  return bytes / 1048576.0;
}

// With --profile: time per step grouped by op and kernel (where a runtime change pays off),
// then the slowest single nodes.
void print_profile(const Options& o, const Session& s) {
  const Plan& p = s.plan();
  const GraphView& g = p.graph;
  if (p.profiled_steps == 0) return;
  std::map<std::string, std::pair<int, double>> groups;  // "op  kernel" -> (nodes, seconds)
  for (int n : p.order) {
    auto& [count, sec] = groups[std::string(op_name(g.node(n).op)) + "  " +
                                p.nodes[static_cast<std::size_t>(n)].kernel_name];
    ++count;
    sec += p.node_seconds[static_cast<std::size_t>(n)];
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [key, v] : groups)
    rows.emplace_back(1e3 * v.second / p.profiled_steps,
                      key + "  (" + std::to_string(v.first) + " nodes)");
  std::sort(rows.rbegin(), rows.rend());
  std::printf("per op and kernel, ms per step:\n");
  for (std::size_t i = 0; i < rows.size() && i < static_cast<std::size_t>(o.profile); ++i)
    std::printf("  %8.3f  %s\n", rows[i].first, rows[i].second.c_str());
  std::printf("slowest nodes:\n%s", s.profile_report(o.profile).c_str());
}

// --trace: the file and what it holds, read back from it.
void print_trace(const std::string& config, const std::string& path) {
  const TraceSummary t = read_trace_summary(path);
  std::printf("bench.%s.trace: %s\n", config.c_str(), path.c_str());
  std::printf("bench.%s.trace_events: %lld\n", config.c_str(), static_cast<long long>(t.events));
  std::printf("bench.%s.trace_runs: %lld\n", config.c_str(), static_cast<long long>(t.runs));
  std::printf("bench.%s.trace_lanes: %lld\n", config.c_str(), static_cast<long long>(t.lanes));
}

SessionOptions session_options(const Options& o) {
  return {.device = o.device,
          .tf32 = o.tf32,
          .cuda_graphs = o.cuda_graphs,
          .threads = o.threads,
          .schedule = o.schedule,
          .profile = o.profile > 0,
          .trace = o.trace,
          .seed = 1,
          .memory_budget = static_cast<std::int64_t>(o.memory_budget_mib * 1048576.0)};
}

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Timing {
  double ms = 0;        // median wall time of the timed steps
  double cpu_ms = 0;    // median CPU time of the process (all threads) per timed step
  double first_ms = 0;  // the first step (it also lowers the graph and creates the kernels)
};

// Times `step`: o.warmup untimed steps, then o.steps timed ones.
Timing time_steps(const Options& o, const std::function<void(int)>& step) {
  std::vector<double> wall, cpu;
  Timing t;
  for (int i = 0; i < o.warmup + o.steps; ++i) {
    const double w0 = now_ms(), c0 = cpu_ms();
    step(i);
    const double w = now_ms() - w0, c = cpu_ms() - c0;
    if (i == 0) t.first_ms = w;
    if (i >= o.warmup) {
      wall.push_back(w);
      cpu.push_back(c);
    }
  }
  t.ms = median(wall);
  t.cpu_ms = median(cpu);
  return t;
}

void run_train(const Options& o, const std::string& config, const bench::BenchModel& m) {
  // Launched by mpirun: each rank takes its rows of the batch, and the gradients are summed
  // across the ranks inside the step (docs/distributed.md).
  Communicator& world = Communicator::world();
  SessionOptions so = session_options(o);
  std::shared_ptr<AllReduceSync> sync;
  if (world.distributed()) {
    sync =
        std::make_shared<AllReduceSync>(world, static_cast<std::size_t>(o.bucket_mib * (1 << 20)));
    sync->set_share(1.0f / static_cast<float>(world.size()));
    so.gradient_sync = sync;
  }
  if (o.in_backward && m.train_in_backward.size() == 0)
    throw Error("stag-bench: --in-backward has a training step for cls, tf and gpt only, not " +
                config);
  Session s(o.in_backward ? m.train_in_backward : m.train, so);
  Array lr(DType::f32, {}), step(DType::f32, {});
  lr.set(0, 1e-4);
  s.set_inputs(shard_batch(Batch{m.inputs}, world.rank(), world.size()).inputs);
  s.set_input("lr", lr);
  std::vector<double> comm_ms, waited_ms;
  const Timing t = time_steps(o, [&](int i) {
    step.set(0, i + 1);
    s.set_input("step", step);
    const CommTotals c0 = world.totals();
    s.run({.training = true, .step = static_cast<std::uint64_t>(i)});
    const CommTotals c1 = world.totals();
    if (i >= o.warmup) {
      comm_ms.push_back(1e3 * (c1.seconds - c0.seconds));
      waited_ms.push_back(1e3 * (c1.waited - c0.waited));
    }
  });
  const double ms = t.ms;
  if (world.distributed()) {
    print(o, config, "ranks", world.size(), "");
    print(o, config, "bucket_mib", o.bucket_mib, "MiB");
    print(o, config, "train_comm_ms", median(comm_ms), "ms");
    print(o, config, "train_comm_exposed_ms", median(waited_ms), "ms");
  }
  const double flops = matmul_flops(s.plan());
  print(o, config, "train_step_ms", ms, "ms");
  print(o, config, "train_cpu_ms", t.cpu_ms, "ms");
  if (!o.label.empty()) return;
  print(o, config, "train_first_step_ms", t.first_ms, "ms");
  print(o, config, "matmul_gflop_per_step", flops / 1e9, "GFLOP");
  print(o, config, "matmul_gflops", flops / 1e9 / (ms / 1e3), "GFLOP/s");
  print(o, config, "plan_peak_mib", static_cast<double>(s.plan().arena_bytes()) / 1048576.0, "MiB");
  print(o, config, "params_mib", params_mib(s), "MiB");
  print(o, config, "rss_peak_mib", rss_peak_mib(), "MiB");
  print(o, config, "loss", s.result(), "nats");
  if (const Recompute& rc = s.plan().recompute; rc.budget > 0) {
    print(o, config, "plan_natural_peak_mib", static_cast<double>(rc.natural_peak) / 1048576.0,
          "MiB");
    print(o, config, "recomputed_values", static_cast<double>(rc.nodes.size()), "");
    print(o, config, "recompute_gflop_per_step", static_cast<double>(rc.extra_flops) / 1e9,
          "GFLOP");
    std::fprintf(stderr, "%s", rc.describe(s.plan().graph).c_str());
  }
  if (o.profile > 0) print_profile(o, s);
  if (!o.trace.empty()) print_trace(config, o.trace);
}

// All-reduce of f32 buffers from 4 KiB to 64 MiB: median time, and the bus bandwidth of a ring
// (2 (N-1)/N bytes through each rank's link), as NCCL's tests report it.
void run_allreduce(const Options& o) {
  Communicator& world = Communicator::world();
  const double n = world.size();
  print(o, "allreduce", "ranks", n, "");
  for (std::size_t bytes = 4096; bytes <= (std::size_t{64} << 20); bytes *= 4) {
    std::vector<float> buf(bytes / sizeof(float), 1.0f);
    const Timing t = time_steps(o, [&](int) { world.allreduce_sum(buf.data(), buf.size()); });
    const std::string size = bytes >= (1 << 20) ? std::to_string(bytes >> 20) + "MiB"
                                                : std::to_string(bytes >> 10) + "KiB";
    print(o, "allreduce", size + "_us", 1e3 * t.ms, "us");
    print(o, "allreduce", size + "_busbw",
          2 * (n - 1) / n * static_cast<double>(bytes) / (t.ms / 1e3) / 1e9, "GB/s");
  }
}

// The forward graph's logits as DIR/<config>.onnx (the weights of a session made as run_infer
// makes it) and the inputs they need as DIR/<config>/inputs.json and raw files, the format of
// tools/ort_bench.js, which times ONNX Runtime on them (./bench.sh).
void export_onnx_model(const Options& o, const std::string& config, const bench::BenchModel& m) {
  Session s(m.forward, session_options(o));
  s.set_inputs(m.inputs);
  s.run({.training = false});
  const std::filesystem::path dir = o.export_onnx;
  std::filesystem::create_directories(dir / config);
  const OnnxOptions oo{.outputs = {"logits"}};
  export_onnx(m.forward, s.params(), (dir / (config + ".onnx")).string(), oo);
  // The same with ONNX's opset-23 Attention op for the fused attention (same inputs).
  export_onnx(m.forward, s.params(), (dir / (config + "_attn.onnx")).string(),
              {.outputs = {"logits"}, .attention_op = true});
  nlohmann::json list = nlohmann::json::array();
  const char* names[] = {"float32", "float64", "bfloat16", "int32", "int64", "bool"};
  for (const std::string& name : onnx_inputs(m.forward, oo)) {
    const Array& a = m.inputs.at(name);
    const std::string file = name + ".bin";
    std::ofstream(dir / config / file, std::ios::binary)
        .write(static_cast<const char*>(a.raw()), static_cast<std::streamsize>(a.bytes()));
    list.push_back({{"name", name},
                    {"dtype", names[static_cast<int>(a.dtype())]},
                    {"dims", a.dims()},
                    {"file", file}});
  }
  std::ofstream(dir / config / "inputs.json") << list.dump();
  std::printf("bench.%s.onnx_export: %s\n", config.c_str(), (dir / (config + ".onnx")).c_str());
}

void run_infer(const Options& o, const std::string& config, const bench::BenchModel& m) {
  Session s(m.forward, session_options(o));
  s.set_inputs(m.inputs);
  const Timing t = time_steps(o, [&](int) { s.run({.training = false}); });
  const double ms = t.ms;
  print(o, config, "infer_ms", ms, "ms");
  print(o, config, "infer_cpu_ms", t.cpu_ms, "ms");
  if (!o.label.empty()) return;
  print(o, config, "infer_matmul_gflops", matmul_flops(s.plan()) / 1e9 / (ms / 1e3), "GFLOP/s");
  print(o, config, "infer_plan_peak_mib", static_cast<double>(s.plan().arena_bytes()) / 1048576.0,
        "MiB");
  print(o, config, "infer_rss_peak_mib", rss_peak_mib(), "MiB");
  if (o.profile > 0) print_profile(o, s);
  if (!o.trace.empty()) print_trace(config, o.trace);
}

// The oneDNN matmul of 2048 x 2048 by 2048 x 2048 outside stag: what the machine can do.
void run_peak(const Options& o) {
  constexpr std::int64_t n = 2048;
  const std::function<void()> matmul = bench::onednn_matmul(n);
  Options po = o;
  po.steps = 10;
  po.warmup = 2;
  const Timing t = time_steps(po, [&](int) { matmul(); });
  print(o, "peak", "matmul_gflops", 2.0 * n * n * n / 1e9 / (t.ms / 1e3), "GFLOP/s");
  if (!cpu_has_bf16_matmul()) {  // oneDNN 2.6 has no bf16 matmul without AVX-512
    std::fprintf(stderr, "stag-bench: no peak.matmul_bf16_gflops: this CPU has no bf16 matmul\n");
    return;
  }
  const std::function<void()> matmul16 = bench::onednn_matmul(n, true);
  const Timing t16 = time_steps(po, [&](int) { matmul16(); });
  print(o, "peak", "matmul_bf16_gflops", 2.0 * n * n * n / 1e9 / (t16.ms / 1e3), "GFLOP/s");
}

// Runs this program again with `args` and waits for it (its output goes to ours).
int run_child(const std::vector<std::string>& args) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    std::perror("stag-bench: execv");
    std::_Exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

const std::vector<std::pair<std::string, bench::BenchModel (*)()>> kModels = {
    {"cls", bench::cls_model},
    {"tf", bench::tf_model},
    {"gpt", bench::gpt_model},
    {"cls_bf16", bench::cls_bf16_model},
    {"tf_bf16", bench::tf_bf16_model},
    {"gpt_bf16", bench::gpt_bf16_model},
    {"cls_unfused", bench::cls_unfused_model},
    {"gpt_unfused", bench::gpt_unfused_model}};

constexpr const char* kUsage = R"(usage: stag-bench [options]
  --config all|peak|cls|tf|gpt|cls_bf16|tf_bf16|gpt_bf16
         |cls_unfused|gpt_unfused
                                 what to time (all: each config and mode in its own process;
                                 *_bf16: the model under stag::autocast, bf16 matmuls;
                                 *_unfused: the attention chain left unfused, as the
                                 GPU backend runs it)
  --device cpu|cuda|cuda_interpret  where the steps run (cuda: the GPU backend, docs/cuda.md;
                                 cuda_interpret: its kernels on the CPU, no GPU, no timing)
  --tf32                         --device cuda: f32 matmuls on TF32 tensor cores
  --no-cuda-graphs               --device cuda: launch every kernel each step instead of
                                 replaying the step's captured CUDA Graph
  --mode both|train|infer        the training step, the forward pass, or both
  --threads N                    threads (TBB arena and own kernels; default 2)
  --omp N                        OpenMP threads for oneDNN (default: --threads)
  --schedule sequential|parallel node order, or a TBB flow graph
  --steps N, --warmup N          timed steps (median reported) and untimed ones before
  --label L                      name figures <config>.schedule.<L>.<metric>
  --profile N                    time every node and print the N slowest
  --bucket-mib M                 data parallelism, under mpirun with one --config and --mode
                                 train: each rank takes its rows of the batch and gradients are
                                 all-reduced in buckets of M MiB (default 25)
  --config allreduce             under mpirun: all-reduce latency and bandwidth by size
  --memory-budget-mib M          keep each step's arena within M MiB by recomputing forward
                                 values in the backward pass (SessionOptions::memory_budget)
  --export-onnx DIR              cls, tf, gpt: write DIR/<config>.onnx (the logits),
                                 DIR/<config>_attn.onnx (the same with the opset-23 Attention
                                 op) and the inputs in DIR/<config>/ for tools/ort_bench.js;
                                 time nothing
  --in-backward                  cls, tf, gpt: the training step updates each parameter as
                                 soon as its gradient is final (AdamW{.in_backward = true})
  --trace FILE                   one model --config and --mode train or infer: write a Chrome
                                 trace-event timeline (Perfetto, chrome://tracing) of the
                                 first 20 runs, warmup included (SessionOptions::trace); the
                                 traced runs launch their nodes one by one
)";

Options parse(int argc, char** argv, std::vector<std::string>& passthrough) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw Error("stag-bench: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    }
    if (a == "--config")
      o.config = value();
    else if (a == "--mode")
      o.mode = value();
    else if (a == "--threads")
      o.threads = std::atoi(value().c_str());
    else if (a == "--device") {
      const std::string v = value();
      const std::optional<Device> d = device_from_name(v);
      if (!d)
        throw Error("stag-bench: --device must be cpu, cuda or cuda_interpret, not '" + v + "'");
      // cuda_interpret: the CUDA kernels run on the CPU (tools/gpu_check.sh --interpret checks
      // the GPU bundle's steps with it); its timings mean nothing.
      o.device = *d;
    } else if (a == "--tf32")
      o.tf32 = true;
    else if (a == "--no-cuda-graphs")
      o.cuda_graphs = false;
    else if (a == "--omp")
      o.omp = std::atoi(value().c_str());
    else if (a == "--schedule") {
      const std::string v = value();
      if (v != "parallel" && v != "sequential")
        throw Error("stag-bench: --schedule must be sequential or parallel, not '" + v + "'");
      o.schedule = v == "parallel" ? Schedule::parallel : Schedule::sequential;
    } else if (a == "--steps")
      o.steps = std::atoi(value().c_str());
    else if (a == "--warmup")
      o.warmup = std::atoi(value().c_str());
    else if (a == "--label")
      o.label = value();
    else if (a == "--profile")
      o.profile = std::atoi(value().c_str());
    else if (a == "--bucket-mib")
      o.bucket_mib = std::atof(value().c_str());
    else if (a == "--memory-budget-mib")
      o.memory_budget_mib = std::atof(value().c_str());
    else if (a == "--in-backward")
      o.in_backward = true;
    else if (a == "--export-onnx")
      o.export_onnx = value();
    else if (a == "--trace")
      o.trace = value();
    else
      throw Error("stag-bench: unknown argument '" + a + "' (try --help)");
    if (a == "--tf32" || a == "--in-backward" || a == "--no-cuda-graphs")
      passthrough.push_back(a);  // a flag: no value follows
    else if (a != "--config" && a != "--mode") {
      passthrough.push_back(a);
      passthrough.push_back(argv[i]);
    }
  }
  const std::vector<std::string> configs = {"all",         "peak",        "cls",      "tf",
                                            "gpt",         "cls_bf16",    "tf_bf16",  "gpt_bf16",
                                            "cls_unfused", "gpt_unfused", "allreduce"},
                                 modes = {"both", "train", "infer"};
  if (std::find(configs.begin(), configs.end(), o.config) == configs.end())
    throw Error("stag-bench: unknown --config '" + o.config +
                "' (all, peak, cls, tf, gpt, *_bf16)");
  if (std::find(modes.begin(), modes.end(), o.mode) == modes.end())
    throw Error("stag-bench: unknown --mode '" + o.mode + "' (both, train, infer)");
  if (o.threads < 1 || o.steps < 1 || o.warmup < 1 || o.omp < 0)
    throw Error("stag-bench: --threads and --steps must be >= 1, --warmup >= 1, --omp >= 0");
  if (o.omp == 0) o.omp = o.threads;
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> pass;
  const Options o = parse(argc, argv, pass);
  // libgomp reads OMP_NUM_THREADS when it loads, and TBB's worker threads take their OpenMP
  // team size from it too: set it (and passive waiting, unless given) and start again.
  const std::string omp = std::to_string(o.omp);
  const char* env_omp = std::getenv("OMP_NUM_THREADS");
  if (env_omp == nullptr || omp != env_omp || std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_NUM_THREADS", omp.c_str(), 1);
    setenv("OMP_WAIT_POLICY", "passive", 0);
    execv("/proc/self/exe", argv);
    std::perror("stag-bench: execv");
    return 1;
  }
  if (Communicator::world().distributed()) {
    if (Communicator::world().rank() != 0 && std::freopen("/dev/null", "w", stdout) == nullptr)
      return 1;
    if (o.config == "allreduce") {
      run_allreduce(o);
      return 0;
    }
    if (o.config == "all" || o.mode != "train")
      throw Error(
          "stag-bench: under mpirun, time one --config with --mode train (each rank "
          "would start its own child processes otherwise)");
  }
  if (!o.trace.empty() && (o.config == "all" || o.config == "peak" || o.config == "allreduce" ||
                           o.mode == "both" || !o.export_onnx.empty()))
    throw Error(
        "stag-bench: --trace needs one model --config (cls, tf, gpt, ...) and --mode train or "
        "infer: one run's timeline per file");
  if (!o.export_onnx.empty() && (o.config == "all" || o.config == "peak"))
    throw Error("stag-bench: --export-onnx needs one model --config (cls, tf, gpt)");
  if (o.config == "all" || (o.mode == "both" && o.export_onnx.empty())) {
    std::vector<std::string> configs;
    if (o.config == "all") {
      std::printf("bench.threads: %d\n", o.threads);
      configs = {"peak", "cls", "tf", "gpt", "cls_bf16", "tf_bf16", "gpt_bf16"};
    } else {
      configs = {o.config};
    }
    int rc = 0;
    for (const std::string& c : configs)
      for (const char* mode : {"train", "infer"}) {
        if (c == "peak" && std::string(mode) == "infer") continue;
        if (o.mode != "both" && o.mode != mode) continue;
        std::vector<std::string> args = {argv[0], "--config", c, "--mode", mode};
        args.insert(args.end(), pass.begin(), pass.end());
        rc |= run_child(args);
      }
    return rc;
  }
  if (o.config == "peak") {
    run_peak(o);
    return 0;
  }
  for (const auto& [name, make] : kModels) {
    if (name != o.config) continue;
    const bench::BenchModel m = make();
    if (name.ends_with("_bf16") && !cpu_has_bf16_matmul())
      std::fprintf(stderr,
                   "stag-bench: this CPU has no bf16 matmul (oneDNN needs AVX-512 or AMX): %s's "
                   "matmuls widen their operands to f32\n",
                   name.c_str());
    if (!o.export_onnx.empty())
      export_onnx_model(o, name, m);
    else if (o.mode == "train")
      run_train(o, name, m);
    else if (o.mode == "infer")
      run_infer(o, name, m);
    else
      throw Error("stag-bench: --mode must be both, train or infer");
    return 0;
  }
  throw Error("stag-bench: unknown --config '" + o.config + "' (all, peak, cls, tf, gpt, *_bf16)");
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}

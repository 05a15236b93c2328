// oneDNN's f32 matmul on the shapes of the benchmark models' weight gradients and attention
// projections, outside stag (issue 19 §3): the figures behind two choices of the CPU matmul
// kernel (docs/benchmarks.md, "Transposed-operand matmuls").
//   - A^T B (a weight's gradient dy^T x, A stored [K, M]) run directly, against a reorder of A
//     into row-major [M, K] followed by the plain product: ops/matmul/cpu.cpp stages A^T when
//     M >= 1024 and N <= 256.
//   - q, k and v projected by three matmuls against one matmul with the weights side by side:
//     what fusing the projections could gain at most.
// Usage: stag-bench-matmul-shapes [--reps N]   (threads: OMP_NUM_THREADS)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

double median_ms(const std::function<void()>& f, int reps) {
  f();  // creates oneDNN's kernels and touches the memory
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Mm {
  dnnl::matmul prim;
  dnnl::memory a, b, c;
};

// C [M, N] = A [M, K] B [K, N]; A transposed (stored [K, M]) and/or B transposed (stored [N, K]).
Mm make(const dnnl::engine& eng, std::int64_t m, std::int64_t k, std::int64_t n, bool ta, bool tb) {
  const dnnl::memory::desc a({m, k}, dt::f32,
                             ta ? dnnl::memory::dims{1, m} : dnnl::memory::dims{k, 1});
  const dnnl::memory::desc b({k, n}, dt::f32,
                             tb ? dnnl::memory::dims{1, k} : dnnl::memory::dims{n, 1});
  const dnnl::memory::desc c({m, n}, dt::f32, tag::ab);
  Mm r{dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), eng)),
       dnnl::memory(a, eng), dnnl::memory(b, eng), dnnl::memory(c, eng)};
  for (dnnl::memory* mem : {&r.a, &r.b}) {
    auto* p = static_cast<float*>(mem->get_data_handle());
    const std::size_t count = mem->get_desc().get_size() / sizeof(float);
    for (std::size_t i = 0; i < count; ++i) p[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
  }
  return r;
}

void run(Mm& mm, dnnl::stream& s) {
  mm.prim.execute(s, {{DNNL_ARG_SRC, mm.a}, {DNNL_ARG_WEIGHTS, mm.b}, {DNNL_ARG_DST, mm.c}});
  s.wait();
}

void print(const std::string& name, const char* metric, double v, const char* unit) {
  std::printf("bench.mm.%s.%s: %.3f %s\n", name.c_str(), metric, v, unit);
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: stag-bench-matmul-shapes [--reps N]\n");
      return 2;
    }
  }
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);

  // Weight gradients dW [out, in] = dY^T X: M = out, K = batch rows, N = in.
  struct Tn {
    const char* name;
    std::int64_t m, k, n;
  };
  const Tn tn[] = {{"gpt_tied_embedding", 4096, 2048, 256}, {"gpt_mlp_gate", 1024, 2048, 256},
                   {"gpt_mlp_down", 256, 2048, 1024},       {"gpt_attn_proj", 256, 2048, 256},
                   {"tf_ffn_w1", 2048, 256, 512},           {"tf_attn_proj", 512, 256, 512},
                   {"cls_ffn_w1", 512, 4096, 128},          {"cls_attn_proj", 128, 4096, 128}};
  for (const Tn& t : tn) {
    const std::string name = std::string(t.name) + "_" + std::to_string(t.m) + "x" +
                             std::to_string(t.k) + "x" + std::to_string(t.n);
    Mm direct = make(eng, t.m, t.k, t.n, true, false);
    Mm plain = make(eng, t.m, t.k, t.n, false, false);
    dnnl::reorder copy(direct.a, plain.a);
    const double flop = 2.0 * static_cast<double>(t.m * t.k * t.n);
    const double d = median_ms([&] { run(direct, s); }, reps);
    const double c = median_ms(
        [&] {
          copy.execute(s, direct.a, plain.a);
          s.wait();
        },
        reps);
    const double p = median_ms([&] { run(plain, s); }, reps);
    print(name, "transposed_ms", d, "ms");
    print(name, "copy_ms", c, "ms");
    print(name, "plain_ms", p, "ms");
    print(name, "transposed_gflops", flop / d / 1e6, "GFLOP/s");
    print(name, "copy_plus_plain_gflops", flop / (c + p) / 1e6, "GFLOP/s");
  }

  // Projections x W^T: three [rows, d] x [d, d] products against one [rows, d] x [d, 3d].
  struct Qkv {
    const char* name;
    std::int64_t rows, d;
  };
  const Qkv qkv[] = {{"tf", 256, 512}, {"cls", 4096, 128}, {"gpt", 2048, 256}};
  for (const Qkv& q : qkv) {
    Mm one = make(eng, q.rows, q.d, q.d, false, true);
    Mm fused = make(eng, q.rows, q.d, 3 * q.d, false, true);
    const double three = 3 * median_ms([&] { run(one, s); }, reps);
    const double f = median_ms([&] { run(fused, s); }, reps);
    const std::string name = std::string("qkv_") + q.name;
    print(name, "three_ms", three, "ms");
    print(name, "fused_ms", f, "ms");
  }
  return 0;
}

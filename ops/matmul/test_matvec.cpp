// The own kernel for a few rows by a large [N, K] weight (ops/matmul/cpu_matvec.cpp, a decode
// step; the weight stored [N, K] or [K, N]): which matmuls take it, and its products against the
// reference evaluator's (sums in double), in f32 and on bf16 operands, with the folded bias, scale
// and activations, on odd sizes (a K tail shorter than a vector, N not a multiple of the 4-row
// blocks).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <stag/autodiff/autocast.hpp>
#include <stag/ops/attention/tiled_bf16.hpp>

#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;

// y = silu(x W1^T + b1) (bias and activation folded), z = (y W2^T) * 0.5 (scale folded), a
// plain gelu_tanh product, and relu(x W3 + b3) with W3 stored [K, N]; K = 300 (a tail of 12
// bf16 / 12 f32 elements; 150 weight rows per thread, not a multiple of 4), N = 257 and 261.
constexpr auto mlp = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 1, 300>>(g);
  auto y = silu(linear<257>(g / "up", x));
  auto z = matmul_nt(y, param<Shape<261, 257>>(g / "down", "weight")) * 0.5;
  auto w = gelu_tanh(matmul_nt(x, param<Shape<261, 300>>(g / "side", "weight")));
  auto v = relu(linear_in_out<261>(g / "conv", x));  // a [K, N] weight (GPT-2's Conv1D)
  return (z + w + v).named("out");
});
constexpr auto mlp16 = autocast<mlp>();
// Products large enough (300 x 16411 multiply-adds per row) to run on both threads rather than
// as small nodes on one: the [N, K] rows split between the threads, and the [K, N] weight's
// 300 rows split into two partial sums that are then added.
constexpr auto wide = model([](Builder& g) {
  auto x = input<"x", Shape<rows, 1, 300>>(g);
  auto a = matmul_nt(x, param<Shape<16411, 300>>(g / "nt", "weight"));
  return (a + relu(linear_in_out<16411>(g / "conv", x))).named("out");
});
constexpr auto wide16 = autocast<wide>();

// The nodes on the own matvec kernel whose description also has `what`.
int own_matvecs(const Session& s, std::string_view what) {
  std::istringstream lines(s.describe_kernels());
  int n = 0;
  for (std::string line; std::getline(lines, line);)
    n += line.find("own matvec") != std::string::npos && line.find(what) != std::string::npos;
  return n;
}

// `path`: the description of the instructions the own kernel should use, empty where the CPU
// has none it takes (oneDNN's kernel then runs every product).
void check(const GraphView& g, std::string_view path, int products) {
  for (std::int64_t m : {1, 2, 3, 4, 5}) {
    INFO(m << " rows");
    Session s(g, {.threads = 2, .seed = 7});
    const NamedArrays in{{"x", th::random_array(f32, {m, 1, 300}, 3 + m)}};
    s.set_inputs(in);
    s.run();
    INFO(s.describe_kernels());
    // The products of 1-4 rows; five rows go to oneDNN.
    const int expected = !path.empty() && m <= 4 ? products : 0;
    CHECK(own_matvecs(s, "") == expected);
    CHECK(own_matvecs(s, path) == expected);
    if (products == 2) CHECK(own_matvecs(s, "[1 thread") == 0);
    const Evaluation e = evaluate_reference(g, in, s.params());
    // f32 sums of 300 products in 16 or 8 lanes: a few units of f32 rounding of the largest
    // terms.
    CHECK(th::relative_error(s.get("out"), e["out"]) <= 1e-5);
  }
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// STAG_OWN_MATVEC set for one scope, its earlier value put back after.
class MatvecEnv {
 public:
  explicit MatvecEnv(const char* value) {
    if (const char* e = std::getenv("STAG_OWN_MATVEC")) old_ = e;
    ::setenv("STAG_OWN_MATVEC", value, 1);
  }
  ~MatvecEnv() {
    if (old_)
      ::setenv("STAG_OWN_MATVEC", old_->c_str(), 1);
    else
      ::unsetenv("STAG_OWN_MATVEC");
  }
  MatvecEnv(const MatvecEnv&) = delete;
  MatvecEnv& operator=(const MatvecEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

TEST_CASE("a few rows by a large weight take the own matvec kernel, f32", "[matmul][matvec]") {
  const MatvecEnv best("1");
  const std::string_view path = cpu_has_avx512() ? "(avx512 fma" : cpu_has_avx2() ? "avx2 fma" : "";
  if (path.empty()) WARN("neither AVX-512 nor AVX2 + FMA on this CPU: oneDNN's kernel runs");
  check(mlp, path, 4);
  check(wide, path, 2);
}

TEST_CASE("a few rows by a large weight take the own matvec kernel, bf16 operands",
          "[matmul][matvec][bf16]") {
  // Both operands rounded to bf16 by autocast's casts: the reference multiplies the same bf16
  // values exactly and sums in double. With AVX512-BF16 the [N, K] products use its dot
  // products and the [K, N] ones widen the weight; without it, the AVX2 loops widen both.
  const MatvecEnv best("1");
  if (attn::cpu_has_bf16_dot()) {
    check(mlp16, "avx512", 4);
    check(wide16, "avx512", 2);
  } else {
    if (!cpu_has_avx2()) WARN("neither AVX512-BF16 nor AVX2 + FMA here: oneDNN's kernel runs");
    check(mlp16, cpu_has_avx2() ? "avx2 fma" : "", 4);
    check(wide16, cpu_has_avx2() ? "avx2 fma" : "", 2);
  }
}

TEST_CASE("STAG_OWN_MATVEC=avx2 runs the AVX2 loops on a CPU that has AVX-512 too",
          "[matmul][matvec][bf16]") {
  // What an AVX2-only host runs, checked on every host that has AVX2 (with AVX-512 or not).
  if (!cpu_has_avx2()) {
    WARN("no AVX2 + FMA on this CPU: the AVX2 loops cannot run here");
    return;
  }
  const MatvecEnv avx2("avx2");
  check(mlp, "(avx2 fma", 4);
  check(wide, "(avx2 fma", 2);
  check(mlp16, "(bf16 widened, avx2 fma", 4);
  check(wide16, "(bf16 widened, avx2 fma", 2);
}

TEST_CASE("STAG_OWN_MATVEC=0 keeps oneDNN's kernel; another value is an error naming it",
          "[matmul][matvec]") {
  {
    const MatvecEnv off("0");
    check(mlp, "", 4);
  }
  const MatvecEnv bad("avx9");
  const auto plan = [] {
    Session s(mlp, {.threads = 2, .seed = 7});
    s.set_inputs({{"x", th::random_array(f32, {1, 1, 300}, 3)}});
    s.run();
  };
  REQUIRE_THROWS_WITH(plan(), Catch::Contains("STAG_OWN_MATVEC is \"avx9\"") &&
                                  Catch::Contains("0 (oneDNN's kernel), 1 (the default) or avx2"));
}

}  // namespace

// CPU kernels of cross_entropy and cross_entropy_backward: own kernels, parallel over rows
// with a vectorised log-sum-exp; per-row losses are summed in a fixed order (deterministic).
// Labels are checked first; a bad label is reported by the reference kernel's message.
#include <cmath>
#include <limits>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/cross_entropy/cross_entropy.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

// NOTE: max subtracted before exp (no overflow); returns log(sum(exp(x))).
STAG_VECTORIZED float log_sum_exp(const float* __restrict x, std::int64_t n) {
  const float mx = vec::max_reduce(x, n);
  if (mx == -std::numeric_limits<float>::infinity()) return mx;
  float z = 0.f;
#pragma omp simd reduction(+ : z)
  for (std::int64_t i = 0; i < n; ++i) z += vec::exp_approx(x[i] - mx);
  return mx + std::log(z);
}

STAG_VECTORIZED float row_sum(const float* __restrict x, std::int64_t n) {
  float s = 0.f;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

// (softmax(x) - target) * scale, target = (1 - eps) onehot(label) + eps / n.
STAG_VECTORIZED void softmax_minus_target(const float* __restrict x, float* __restrict dx,
                                          std::int64_t n, std::int64_t label, float lse,
                                          float scale, float eps) {
  const float spread = eps / static_cast<float>(n) * scale;
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dx[i] = vec::exp_approx(x[i] - lse) * scale - spread;
  dx[label] -= (1.f - eps) * scale;
}

class CrossEntropyKernel final : public OwnKernel {
 public:
  CrossEntropyKernel(const KernelNode& n, bool backward)
      : OwnKernel(n,
                  backward ? &OpDef<OpId::cross_entropy_backward>::reference
                           : &OpDef<OpId::cross_entropy>::reference,
                  backward ? "own cross_entropy backward" : "own cross_entropy"),
        backward_(backward) {
    classes_ = in_[0].dims[in_[0].rank - 1];
    rows_ = in_[1].numel();
    labels_.resize(static_cast<std::size_t>(rows_));
    if (!backward_) losses_.resize(static_cast<std::size_t>(rows_));
  }

  void run() override {
    const std::int64_t ignore = attr().i[0];
    std::int64_t count = 0;
    bool ok = true;
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::int64_t y = in_[1].dtype == DType::i32 ? in_[1].as<const std::int32_t>()[r]
                                                        : in_[1].as<const std::int64_t>()[r];
      const bool skip = y == ignore;
      ok &= skip || (y >= 0 && y < classes_);
      labels_[static_cast<std::size_t>(r)] = skip ? -1 : y;
      count += !skip;
    }
    if (!ok) run_reference();  // throws with the position of the first bad label
    const float* x = in_[0].as<const float>();
    const float eps = static_cast<float>(attr().f[0]);
    if (!backward_) {
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r) {
        const std::int64_t y = labels_[static_cast<std::size_t>(r)];
        const float* row = x + r * classes_;
        // NOTE: a -inf logit at the label means probability 0: the loss is +inf.
        if (y < 0) {
          losses_[static_cast<std::size_t>(r)] = 0.0;
          continue;
        }
        const float lse = log_sum_exp(row, classes_);
        // A -inf logit at the label (or, smoothed, anywhere: the sum is -inf) gives +inf.
        double loss = row[y] == -std::numeric_limits<float>::infinity()
                          ? INFINITY
                          : static_cast<double>(lse) - static_cast<double>(row[y]);
        if (eps > 0.f)
          loss = (1.0 - eps) * loss +
                 eps * (static_cast<double>(lse) - static_cast<double>(row_sum(row, classes_)) /
                                                       static_cast<double>(classes_));
        losses_[static_cast<std::size_t>(r)] = loss;
      }
      double total = 0;
      for (double l : losses_) total += l;
      *out_.as<float>() =
          count ? static_cast<float>(total / static_cast<double>(count)) : 0.f;  // all ignored: 0
      return;
    }
    const float g = *in_[2].as<const float>();
    const float scale = count ? g / static_cast<float>(count) : 0.f;
    float* dx = out_.as<float>();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows_; ++r) {
      const std::int64_t y = labels_[static_cast<std::size_t>(r)];
      float* d = dx + r * classes_;
      if (y < 0) {
        for (std::int64_t i = 0; i < classes_; ++i) d[i] = 0.f;
        continue;
      }
      softmax_minus_target(x + r * classes_, d, classes_, y,
                           log_sum_exp(x + r * classes_, classes_), scale, eps);
    }
  }

 private:
  bool backward_;
  std::int64_t classes_ = 0, rows_ = 0;
  std::vector<std::int64_t> labels_;
  std::vector<double> losses_;
};

bool supported(const KernelNode& n) {
  return n.in[0].dtype == DType::f32 && n.in[0].contiguous() &&
         (n.in[1].dtype == DType::i32 || n.in[1].dtype == DType::i64) && n.in[1].contiguous() &&
         n.in[0].dims[n.in[0].rank - 1] > 0;
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::cross_entropy>::cpu(const KernelNode& n) {
  return supported(n) ? std::make_unique<CrossEntropyKernel>(n, false) : nullptr;
}
std::unique_ptr<Kernel> OpDef<OpId::cross_entropy_backward>::cpu(const KernelNode& n) {
  return supported(n) ? std::make_unique<CrossEntropyKernel>(n, true) : nullptr;
}

}  // namespace stag

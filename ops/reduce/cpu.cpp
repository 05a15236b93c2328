// CPU kernels of sum, mean and max. When the reduced axes are one contiguous run of the input's
// dims (leading: bias gradients [B, S, N] -> [N]; trailing: row sums; middle: pooling over the
// sequence [B, S, D] -> [B, D]) an own kernel views the input as [outer, red, inner] and folds
// the middle dim, vectorised along the contiguous dim and parallel over a fixed partition whose
// partial results combine in a fixed order, so results do not depend on thread timing. Other
// patterns use oneDNN reduction.
#include <algorithm>
#include <limits>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/reduce/reduce.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

enum class Fold { sum, mean, max };

// acc[i] (op)= x[r * inner + i] for r in [0, rows).
void fold_rows_into(float* __restrict acc, const float* __restrict x, std::int64_t rows,
                    std::int64_t inner, bool max) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * inner;
    if (max) {
#pragma omp simd
      for (std::int64_t c = 0; c < inner; ++c) acc[c] = xr[c] > acc[c] ? xr[c] : acc[c];
    } else {
#pragma omp simd
      for (std::int64_t c = 0; c < inner; ++c) acc[c] += xr[c];
    }
  }
}

float fold_run(const float* __restrict x, std::int64_t n, bool max) {
  if (max) {
    return vec::max_reduce(x, n);
  }
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (std::int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

class ReduceKernel final : public Kernel {
 public:
  ReduceKernel(const KernelNode& n, Fold fold, std::int64_t outer, std::int64_t red,
               std::int64_t inner)
      : x_(n.in[0].as<const float>()),
        y_(n.out.as<float>()),
        fold_(fold),
        outer_(outer),
        red_(red),
        inner_(inner) {
    // Split the reduced dim into chunks when there is too little outer work to share.
    chunks_ = outer_ >= 4 * std::max(1, n.ctx.threads)
                  ? 1
                  : static_cast<int>(std::clamp<std::int64_t>(red_ / 64, 1, 16));
    partial_.assign(static_cast<std::size_t>(chunks_ * outer_ * inner_), 0.f);
  }
  void run() override {
    const bool max = fold_ == Fold::max;
    const float init = max ? -std::numeric_limits<float>::infinity() : 0.f;
    const std::int64_t per = (red_ + chunks_ - 1) / chunks_;
    const std::int64_t tasks = chunks_ * outer_;
#pragma omp parallel for schedule(static)
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::int64_t o = t / chunks_, c = t % chunks_;
      const std::int64_t r0 = std::min(red_, c * per), r1 = std::min(red_, r0 + per);
      const float* x = x_ + o * red_ * inner_ + r0 * inner_;
      float* acc = partial_.data() + t * inner_;
      if (inner_ == 1) {
        acc[0] = fold_run(x, r1 - r0, max);
      } else {
        std::fill(acc, acc + inner_, init);
        fold_rows_into(acc, x, r1 - r0, inner_, max);
      }
    }
    const float scale = fold_ == Fold::mean ? 1.f / static_cast<float>(red_) : 1.f;
#pragma omp parallel for schedule(static)
    for (std::int64_t o = 0; o < outer_; ++o) {
      float* y = y_ + o * inner_;
      std::copy(partial_.data() + o * chunks_ * inner_,
                partial_.data() + (o * chunks_ + 1) * inner_, y);
      for (int c = 1; c < chunks_; ++c)
        fold_rows_into(y, partial_.data() + (o * chunks_ + c) * inner_, 1, inner_, max);
      if (scale != 1.f)
        for (std::int64_t i = 0; i < inner_; ++i) y[i] *= scale;
    }
  }
  std::string describe() const override {
    return "own reduction";
  }

 private:
  const float* x_;
  float* y_;
  Fold fold_;
  std::int64_t outer_, red_, inner_;
  int chunks_ = 1;
  std::vector<float> partial_;
};

std::unique_ptr<Kernel> reduction(const KernelNode& n, Fold fold, dnnl::algorithm alg) {
  const TensorView& x = n.in[0];
  if (n.out.dtype != DType::f32 || !x.contiguous() || x.rank == 0) return nullptr;
  const auto mask = static_cast<std::uint32_t>(n.attr().i[0]);
  int first = 0;
  while (first < x.rank && !(mask & (1u << first))) ++first;
  int last = first;
  while (last < x.rank && (mask & (1u << last))) ++last;
  bool run = first < x.rank;
  for (int d = last; d < x.rank; ++d) run = run && !(mask & (1u << d));
  if (run) {  // the reduced axes are [first, last)
    std::int64_t outer = 1, red = 1, inner = 1;
    for (int d = 0; d < first; ++d) outer *= x.dims[d];
    for (int d = first; d < last; ++d) red *= x.dims[d];
    for (int d = last; d < x.rank; ++d) inner *= x.dims[d];
    if (outer > 0 && red > 0 && inner > 0)
      return std::make_unique<ReduceKernel>(n, fold, outer, red, inner);
  }
  TensorView dst = x;  // the output seen with reduced dims kept as 1
  for (int d = 0; d < x.rank; ++d)
    if (mask & (1u << d)) dst.dims[d] = 1;
  dst.set_contiguous();
  dst.data = n.out.data;
  const dnnl::engine& eng = n.ctx.eng;
  try {
    dnnl::reduction::primitive_desc pd(
        dnnl::reduction::desc(alg, memory_desc(x), memory_desc(dst), 0.f, 0.f), eng);
    return std::make_unique<OnednnKernel>(
        eng, make_primitive<dnnl::reduction>(pd),
        std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(x, eng)},
                                              {DNNL_ARG_DST, memory_of(dst, eng)}},
        "onednn reduction (" + impl_name(pd) + ")");
  } catch (const dnnl::error&) {
    return nullptr;  // e.g. nothing reduced (oneDNN refuses identical shapes)
  }
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::sum>::cpu(const KernelNode& n) {
  return reduction(n, Fold::sum, dnnl::algorithm::reduction_sum);
}
std::unique_ptr<Kernel> OpDef<OpId::mean>::cpu(const KernelNode& n) {
  return reduction(n, Fold::mean, dnnl::algorithm::reduction_mean);
}
std::unique_ptr<Kernel> OpDef<OpId::max>::cpu(const KernelNode& n) {
  return reduction(n, Fold::max, dnnl::algorithm::reduction_max);
}

}  // namespace stag

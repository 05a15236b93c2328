// CPU kernels of sum, mean and max. Reductions over leading axes (bias gradients: [B, S, N] ->
// [N]) and over trailing axes (row sums) run an own kernel, vectorised along the contiguous
// dim and parallel over a fixed number of chunks combined in a fixed order, so results do not
// depend on thread timing. Other patterns use oneDNN reduction.
#include <algorithm>
#include <limits>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/reduce/reduce.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

enum class Fold { sum, mean, max };

STAG_VECTORIZED void fold_rows_into(float* __restrict acc, const float* __restrict x, std::int64_t rows,
                                    std::int64_t cols, bool max) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    if (max)
      for (std::int64_t c = 0; c < cols; ++c) acc[c] = xr[c] > acc[c] ? xr[c] : acc[c];
    else
      for (std::int64_t c = 0; c < cols; ++c) acc[c] += xr[c];
  }
}

STAG_VECTORIZED float fold_row(const float* __restrict x, std::int64_t n, bool max) {
  float acc = max ? -std::numeric_limits<float>::infinity() : 0.f;
  if (max)
    for (std::int64_t i = 0; i < n; ++i) acc = x[i] > acc ? x[i] : acc;
  else
    for (std::int64_t i = 0; i < n; ++i) acc += x[i];
  return acc;
}

// [rows, cols] -> [cols] (leading) or [rows] (trailing), for contiguous inputs.
class ReduceKernel final : public CpuKernel {
 public:
  ReduceKernel(const CpuNode& n, Fold fold, bool leading, std::int64_t rows, std::int64_t cols)
      : x_(n.in[0].as<const float>()), y_(n.out.as<float>()), fold_(fold), leading_(leading), rows_(rows), cols_(cols) {
    chunks_ = leading ? static_cast<int>(std::clamp<std::int64_t>(rows / 64, 1, 4 * std::max(1, n.ctx.threads))) : 1;
    if (leading) partial_.assign(static_cast<std::size_t>(chunks_ * cols), 0.f);
  }
  void run() override {
    const bool max = fold_ == Fold::max;
    const float init = max ? -std::numeric_limits<float>::infinity() : 0.f;
    if (leading_) {
      const std::int64_t per = (rows_ + chunks_ - 1) / chunks_;
#pragma omp parallel for schedule(static)
      for (int c = 0; c < chunks_; ++c) {
        float* acc = partial_.data() + static_cast<std::int64_t>(c) * cols_;
        std::fill(acc, acc + cols_, init);
        const std::int64_t r0 = std::min(rows_, c * per), r1 = std::min(rows_, r0 + per);
        fold_rows_into(acc, x_ + r0 * cols_, r1 - r0, cols_, max);
      }
      std::fill(y_, y_ + cols_, init);
      for (int c = 0; c < chunks_; ++c) fold_rows_into(y_, partial_.data() + static_cast<std::int64_t>(c) * cols_, 1, cols_, max);
      if (fold_ == Fold::mean)
        for (std::int64_t k = 0; k < cols_; ++k) y_[k] /= static_cast<float>(rows_);
    } else {
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r) {
        const float v = fold_row(x_ + r * cols_, cols_, max);
        y_[r] = fold_ == Fold::mean ? v / static_cast<float>(cols_) : v;
      }
    }
  }
  std::string describe() const override {
    return std::string("own reduction over ") + (leading_ ? "leading" : "trailing") + " axes";
  }

 private:
  const float* x_;
  float* y_;
  Fold fold_;
  bool leading_;
  std::int64_t rows_, cols_;
  int chunks_ = 1;
  std::vector<float> partial_;
};

std::unique_ptr<CpuKernel> reduction(const CpuNode& n, Fold fold, dnnl::algorithm alg) {
  const TensorView& x = n.in[0];
  if (n.out.dtype != DType::f32 || !x.contiguous() || x.rank == 0) return nullptr;
  const auto mask = static_cast<std::uint32_t>(n.attr().i[0]);
  // Leading: axes 0..k-1 reduced, the rest kept; trailing: axes k..rank-1 reduced.
  int k = 0;
  while (k < x.rank && (mask & (1u << k))) ++k;
  bool leading = k > 0, trailing = true;
  for (int d = k; d < x.rank; ++d) leading = leading && !(mask & (1u << d));
  int t = 0;
  while (t < x.rank && !(mask & (1u << t))) ++t;
  for (int d = t; d < x.rank; ++d) trailing = trailing && (mask & (1u << d));
  std::int64_t split = 1;
  if (leading || trailing) {
    const int at = leading ? k : t;
    for (int d = 0; d < at; ++d) split *= x.dims[d];
    const std::int64_t rest = split ? x.numel() / split : 0;
    if (split > 0 && rest > 0) return std::make_unique<ReduceKernel>(n, fold, leading, split, rest);
  }
  TensorView dst = x;  // the output seen with reduced dims kept as 1
  for (int d = 0; d < x.rank; ++d)
    if (mask & (1u << d)) dst.dims[d] = 1;
  dst.set_contiguous();
  dst.data = n.out.data;
  const dnnl::engine& eng = n.ctx.eng;
  try {
    dnnl::reduction::primitive_desc pd(dnnl::reduction::desc(alg, memory_desc(x), memory_desc(dst), 0.f, 0.f), eng);
    return std::make_unique<OnednnKernel>(eng, make_primitive<dnnl::reduction>(pd),
                                          std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(x, eng)},
                                                                                {DNNL_ARG_DST, memory_of(dst, eng)}},
                                          "onednn reduction (" + impl_name(pd) + ")");
  } catch (const dnnl::error&) {
    return nullptr;  // e.g. nothing reduced (oneDNN refuses identical shapes)
  }
}

}  // namespace

std::unique_ptr<CpuKernel> OpDef<OpId::sum>::cpu(const CpuNode& n) {
  return reduction(n, Fold::sum, dnnl::algorithm::reduction_sum);
}
std::unique_ptr<CpuKernel> OpDef<OpId::mean>::cpu(const CpuNode& n) {
  return reduction(n, Fold::mean, dnnl::algorithm::reduction_mean);
}
std::unique_ptr<CpuKernel> OpDef<OpId::max>::cpu(const CpuNode& n) {
  return reduction(n, Fold::max, dnnl::algorithm::reduction_max);
}

}  // namespace stag

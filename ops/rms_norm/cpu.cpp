// CPU kernels of rms_norm and rms_norm_backward: own kernels, parallel over rows, vectorised.
#include <cmath>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/rms_norm/rms_norm.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

STAG_VECTORIZED void rms_row(const float* __restrict x, const float* __restrict w,
                             float* __restrict y, std::int64_t n, float eps) {
  float ss = 0.f;
#pragma omp simd reduction(+ : ss)
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float rstd =
      1.f / std::sqrt(ss / static_cast<float>(n) + eps);  // NOTE: eps inside the sqrt
  if (w)
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * rstd * w[i];
  else
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * rstd;
}

// dx = rstd * (gh - xh * mean(gh * xh)), gh = g * w, xh = x * rstd.
STAG_VECTORIZED void rms_row_backward(const float* __restrict x, const float* __restrict w,
                                      const float* __restrict g, float* __restrict dx,
                                      std::int64_t n, float eps) {
  float ss = 0.f;
#pragma omp simd reduction(+ : ss)
  for (std::int64_t i = 0; i < n; ++i) ss += x[i] * x[i];
  const float rstd = 1.f / std::sqrt(ss / static_cast<float>(n) + eps);
  float sgx = 0.f;
#pragma omp simd reduction(+ : sgx)
  for (std::int64_t i = 0; i < n; ++i) sgx += (w ? g[i] * w[i] : g[i]) * x[i] * rstd;
  const float c = sgx / static_cast<float>(n);
  for (std::int64_t i = 0; i < n; ++i) dx[i] = rstd * ((w ? g[i] * w[i] : g[i]) - x[i] * rstd * c);
}

class RmsNormKernel final : public OwnKernel {
 public:
  RmsNormKernel(const KernelNode& n, bool backward)
      : OwnKernel(n,
                  backward ? &OpDef<OpId::rms_norm_backward>::reference
                           : &OpDef<OpId::rms_norm>::reference,
                  backward ? "own rms_norm backward" : "own rms_norm"),
        backward_(backward) {
    const int k = static_cast<int>(attr().i[0]);
    len_ = 1;
    for (int d = in_[0].rank - k; d < in_[0].rank; ++d) len_ *= in_[0].dims[d];
    rows_ = len_ ? in_[0].numel() / len_ : 0;
    eps_ = static_cast<float>(attr().f[0]);
  }
  void run() override {
    const float* x = in_[0].as<const float>();
    float* y = out_.as<float>();
    if (backward_) {
      const bool weighted = in_.size() == 3;
      const float* w = weighted ? in_[1].as<const float>() : nullptr;
      const float* g = in_[weighted ? 2 : 1].as<const float>();
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r)
        rms_row_backward(x + r * len_, w, g + r * len_, y + r * len_, len_, eps_);
    } else {
      const float* w = in_.size() == 2 ? in_[1].as<const float>() : nullptr;
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r) rms_row(x + r * len_, w, y + r * len_, len_, eps_);
    }
  }

 private:
  bool backward_;
  std::int64_t len_ = 0, rows_ = 0;
  float eps_ = 0;
};

bool plain_f32(const KernelNode& n) {
  for (const TensorView& v : n.in)
    if (v.dtype != DType::f32 || !v.contiguous()) return false;
  return n.out.dtype == DType::f32 && n.out.numel() > 0;
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::rms_norm>::cpu(const KernelNode& n) {
  return plain_f32(n) ? std::make_unique<RmsNormKernel>(n, false) : nullptr;
}
std::unique_ptr<Kernel> OpDef<OpId::rms_norm_backward>::cpu(const KernelNode& n) {
  return plain_f32(n) ? std::make_unique<RmsNormKernel>(n, true) : nullptr;
}

}  // namespace stag

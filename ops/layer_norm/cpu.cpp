// CPU kernels of layer_norm and layer_norm_backward: own kernels, parallel over rows, each row
// vectorised (statistics accumulated in float over one row, which keeps the error well below
// the f32 tolerance for rows up to a few thousand elements).
#include <cmath>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/layer_norm/layer_norm.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

STAG_VECTORIZED void ln_row(const float* __restrict x, const float* __restrict w,
                            const float* __restrict b, float* __restrict y, std::int64_t n,
                            float eps) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float ss = 0.f;
#pragma omp simd reduction(+ : ss)
  for (std::int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const float rstd =
      1.f / std::sqrt(ss / static_cast<float>(n) + eps);  // NOTE: eps inside the sqrt
  if (w)
    for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  else
    for (std::int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * rstd;
}

// dx = rstd * (gh - mean(gh) - xh * mean(gh * xh)), gh = g * w, xh = (x - mean) * rstd.
STAG_VECTORIZED void ln_row_backward(const float* __restrict x, const float* __restrict w,
                                     const float* __restrict g, float* __restrict dx,
                                     std::int64_t n, float eps) {
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (std::int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float ss = 0.f;
#pragma omp simd reduction(+ : ss)
  for (std::int64_t i = 0; i < n; ++i) ss += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.f / std::sqrt(ss / static_cast<float>(n) + eps);
  float sg = 0.f, sgx = 0.f;
#pragma omp simd reduction(+ : sg, sgx)
  for (std::int64_t i = 0; i < n; ++i) {
    const float gh = w ? g[i] * w[i] : g[i];
    sg += gh;
    sgx += gh * (x[i] - mean) * rstd;
  }
  const float inv = 1.f / static_cast<float>(n);
  for (std::int64_t i = 0; i < n; ++i) {
    const float gh = w ? g[i] * w[i] : g[i];
    dx[i] = rstd * (gh - sg * inv - (x[i] - mean) * rstd * sgx * inv);
  }
}

class LayerNormKernel final : public OwnKernel {
 public:
  LayerNormKernel(const KernelNode& n, bool backward)
      : OwnKernel(n,
                  backward ? &OpDef<OpId::layer_norm_backward>::reference
                           : &OpDef<OpId::layer_norm>::reference,
                  backward ? "own layer_norm backward" : "own layer_norm"),
        backward_(backward) {
    const int k = static_cast<int>(attr().i[0]);
    len_ = 1;
    for (int d = in_[0].rank - k; d < in_[0].rank; ++d) len_ *= in_[0].dims[d];
    rows_ = len_ ? in_[0].numel() / len_ : 0;
    eps_ = static_cast<float>(attr().f[0]);
  }
  void run() override {
    const float* x = in_[0].as<const float>();
    const bool affine = backward_ ? in_.size() == 3 : in_.size() == 3;
    const float* w = affine ? in_[1].as<const float>() : nullptr;
    float* y = out_.as<float>();
    if (backward_) {
      const float* g = in_[affine ? 2 : 1].as<const float>();
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r)
        ln_row_backward(x + r * len_, w, g + r * len_, y + r * len_, len_, eps_);
    } else {
      const float* b = affine ? in_[2].as<const float>() : nullptr;
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < rows_; ++r) ln_row(x + r * len_, w, b, y + r * len_, len_, eps_);
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

std::unique_ptr<Kernel> OpDef<OpId::layer_norm>::cpu(const KernelNode& n) {
  return plain_f32(n) ? std::make_unique<LayerNormKernel>(n, false) : nullptr;
}
std::unique_ptr<Kernel> OpDef<OpId::layer_norm_backward>::cpu(const KernelNode& n) {
  return plain_f32(n) ? std::make_unique<LayerNormKernel>(n, true) : nullptr;
}

}  // namespace stag

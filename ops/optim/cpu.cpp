// CPU kernels of the optimizer updates: the same formulas as the reference (update.hpp),
// parallel over elements with OpenMP (deterministic: every element is independent).
#include <algorithm>
#include <cmath>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/optim/optim.hpp>
#include <stag/ops/optim/update.hpp>

namespace stag {
namespace {

class SgdKernel final : public Kernel {
 public:
  explicit SgdKernel(const KernelNode& n) : in_(n.in), out_(n.out), at_(n.attr()) {}
  void run() override {
    *out_.as<float>() = 0.f;
    const float gscale = *in_[4].as<const float>();
    if (!std::isfinite(gscale)) return;  // NOTE: non-finite loss or gradients: skip the update
    const float lr = *in_[3].as<const float>();
    float* p = in_[0].as<float>();
    const float* g = in_[1].as<const float>();
    float* buf = in_[2].as<float>();
    const optim::SgdScalars s =
        optim::sgd_scalars(at_.f, at_.i, in_.size() > 5 ? in_[5].as<const float>() : nullptr);
    const float momentum = s.momentum, wd = s.wd;
    const bool nesterov = at_.i[0] != 0;
    const std::int64_t n = in_[0].numel();
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      optim::sgd_step<float>(p[i], g[i] * gscale, buf[i], lr, momentum, wd, nesterov);
  }
  std::string describe() const override {
    return "own sgd update";
  }

 private:
  std::vector<TensorView> in_;
  TensorView out_;
  Attrs at_;
};

// The update over n elements, with the weight-decay style a constant: with it a run-time value,
// g++ kept the loop scalar ("control flow in loop"), and the update was 15 % of tf's step.
template <bool Decoupled>
void adam_loop(float* __restrict p, const float* __restrict g, float* __restrict m,
               float* __restrict v, std::int64_t n, float gscale, optim::AdamScalars s) {
#pragma omp parallel
  {
    // A private copy inside the parallel region: the outlined region reads shared variables
    // through a pointer, which would keep `decoupled` a run-time value again.
    optim::AdamScalars ls = s;
    ls.decoupled = Decoupled;
#pragma omp for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i)
      optim::adam_step<float>(p[i], g[i] * gscale, m[i], v[i], ls);
  }
}

class AdamKernel final : public Kernel {
 public:
  explicit AdamKernel(const KernelNode& n) : in_(n.in), out_(n.out), at_(n.attr()) {}
  void run() override {
    *out_.as<float>() = 0.f;
    const float gscale = *in_[6].as<const float>();
    if (!std::isfinite(gscale)) return;  // NOTE: non-finite loss or gradients: skip the update
    const double t = std::max(1.0, static_cast<double>(*in_[5].as<const float>()));
    const optim::AdamScalars s =
        optim::adam_scalars(*in_[4].as<const float>(), t, at_.f, at_.i,
                            in_.size() > 7 ? in_[7].as<const float>() : nullptr);
    float* p = in_[0].as<float>();
    const float* g = in_[1].as<const float>();
    float* m = in_[2].as<float>();
    float* v = in_[3].as<float>();
    const std::int64_t n = in_[0].numel();
    if (s.decoupled)
      adam_loop<true>(p, g, m, v, n, gscale, s);
    else
      adam_loop<false>(p, g, m, v, n, gscale, s);
  }
  std::string describe() const override { return "own adam update"; }

 private:
  std::vector<TensorView> in_;
  TensorView out_;
  Attrs at_;
};

bool all_f32_contiguous(const KernelNode& n) {
  for (const TensorView& v : n.in)
    if (v.dtype != DType::f32 || !v.contiguous()) return false;
  return true;
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::sgd_update>::cpu(const KernelNode& n) {
  return all_f32_contiguous(n) ? std::make_unique<SgdKernel>(n) : nullptr;
}
std::unique_ptr<Kernel> OpDef<OpId::adam_update>::cpu(const KernelNode& n) {
  return all_f32_contiguous(n) ? std::make_unique<AdamKernel>(n) : nullptr;
}

}  // namespace stag

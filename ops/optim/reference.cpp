// Reference kernels of the optimizer updates: plain loops over the parameter.
#include <algorithm>
#include <cmath>

#include <stag/ops/kernel.hpp>
#include <stag/ops/optim/optim.hpp>
#include <stag/ops/optim/update.hpp>

namespace stag {

void OpDef<OpId::sgd_update>::reference(const KernelArgs& a) {
  kernel::store(a.out, 0, 0.0);
  const double gscale = kernel::load(a.in[4], 0);
  if (!std::isfinite(gscale)) return;  // NOTE: non-finite loss or gradients: skip the update
  const float lr = static_cast<float>(kernel::load(a.in[3], 0));
  const Attrs& at = a.attr();
  float hp[2];
  if (a.in.size() > 5)
    for (int k = 0; k < 2; ++k) hp[k] = static_cast<float>(kernel::load(a.in[5], k));
  const optim::SgdScalars sc = optim::sgd_scalars(at.f, at.i, a.in.size() > 5 ? hp : nullptr);
  kernel::with_float(a.in[0].dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = a.in[0].as<T>();
    const T* g = a.in[1].as<const T>();
    T* buf = a.in[2].as<T>();
    for (std::int64_t i = 0; i < a.in[0].numel(); ++i)
      optim::sgd_step<T>(p[i], g[i] * static_cast<T>(gscale), buf[i], lr, sc.momentum, sc.wd,
                         at.i[0] != 0);
  });
}

void OpDef<OpId::adam_update>::reference(const KernelArgs& a) {
  kernel::store(a.out, 0, 0.0);
  const double gscale = kernel::load(a.in[6], 0);
  if (!std::isfinite(gscale)) return;  // NOTE: non-finite loss or gradients: skip the update
  const Attrs& at = a.attr();
  const double t = std::max(1.0, kernel::load(a.in[5], 0));  // steps count from 1
  float hp[4];
  if (a.in.size() > 7)
    for (int k = 0; k < 4; ++k) hp[k] = static_cast<float>(kernel::load(a.in[7], k));
  const optim::AdamScalars s = optim::adam_scalars(static_cast<float>(kernel::load(a.in[4], 0)), t,
                                                   at.f, at.i, a.in.size() > 7 ? hp : nullptr);
  kernel::with_float(a.in[0].dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = a.in[0].as<T>();
    const T* g = a.in[1].as<const T>();
    T* m = a.in[2].as<T>();
    T* v = a.in[3].as<T>();
    for (std::int64_t i = 0; i < a.in[0].numel(); ++i)
      optim::adam_step<T>(p[i], g[i] * static_cast<T>(gscale), m[i], v[i], s);
  });
}

}  // namespace stag

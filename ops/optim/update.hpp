// The element-wise update formulas of the optimizers, shared by the reference and CPU kernels
// so both backends apply bit-for-bit the same arithmetic order.
#pragma once

#include <cmath>

#include <cstdint>
#include <stag/ops/hd.hpp>

namespace stag::optim {

struct AdamScalars {
  float lr, beta1, beta2, eps, wd, c1, c2;  // c1 = 1 / (1 - beta1^t), c2 = 1 / (1 - beta2^t)
  bool decoupled;
};

// The scalars of one Adam step at step t: from the node's attrs, or (when the node has the
// optional settings input) from `hp` = {beta1, beta2, eps, weight decay}, with the decay zeroed
// for parameters created without it. Both backends call this, so they agree bit for bit.
STAG_HD inline AdamScalars adam_scalars(float lr, double t, const double* attr_f,
                                        const std::int64_t* attr_i, const float* hp) {
  const double b1 = hp ? hp[0] : attr_f[0], b2 = hp ? hp[1] : attr_f[1];
  const double eps = hp ? hp[2] : attr_f[2];
  const double wd = hp ? (attr_i[1] ? hp[3] : 0.0) : attr_f[3];
  return {lr,
          static_cast<float>(b1),
          static_cast<float>(b2),
          static_cast<float>(eps),
          static_cast<float>(wd),
          static_cast<float>(1.0 / (1.0 - std::pow(b1, t))),
          static_cast<float>(1.0 / (1.0 - std::pow(b2, t))),
          attr_i[0] != 0};
}

struct SgdScalars {
  float momentum, wd;
};
STAG_HD inline SgdScalars sgd_scalars(const double* attr_f, const std::int64_t* attr_i,
                                      const float* hp) {
  if (hp) return {hp[0], attr_i[1] ? hp[1] : 0.f};
  return {static_cast<float>(attr_f[0]), static_cast<float>(attr_f[1])};
}

template <class T>
STAG_HD inline void adam_step(T& p, T g, T& m, T& v, const AdamScalars& s) {
  if (!s.decoupled) g += static_cast<T>(s.wd) * p;
  m = static_cast<T>(s.beta1) * m + static_cast<T>(1 - s.beta1) * g;
  v = static_cast<T>(s.beta2) * v + static_cast<T>(1 - s.beta2) * g * g;
  const T update =
      (m * static_cast<T>(s.c1)) / (std::sqrt(v * static_cast<T>(s.c2)) + static_cast<T>(s.eps));
  p -= static_cast<T>(s.lr) * (update + (s.decoupled ? static_cast<T>(s.wd) * p : T(0)));
}

template <class T>
STAG_HD inline void sgd_step(T& p, T g, T& buf, float lr, float momentum, float wd, bool nesterov) {
  g += static_cast<T>(wd) * p;
  buf = static_cast<T>(momentum) * buf + g;
  p -= static_cast<T>(lr) * (nesterov ? g + static_cast<T>(momentum) * buf : buf);
}

}  // namespace stag::optim

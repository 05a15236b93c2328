// The element-wise update formulas of the optimizers, shared by the reference and CPU kernels
// so both backends apply bit-for-bit the same arithmetic order.
#pragma once

#include <cmath>

namespace stag::optim {

struct AdamScalars {
  float lr, beta1, beta2, eps, wd, c1, c2;  // c1 = 1 / (1 - beta1^t), c2 = 1 / (1 - beta2^t)
  bool decoupled;
};

template <class T>
inline void adam_step(T& p, T g, T& m, T& v, const AdamScalars& s) {
  if (!s.decoupled) g += static_cast<T>(s.wd) * p;
  m = static_cast<T>(s.beta1) * m + static_cast<T>(1 - s.beta1) * g;
  v = static_cast<T>(s.beta2) * v + static_cast<T>(1 - s.beta2) * g * g;
  const T update =
      (m * static_cast<T>(s.c1)) / (std::sqrt(v * static_cast<T>(s.c2)) + static_cast<T>(s.eps));
  p -= static_cast<T>(s.lr) * (update + (s.decoupled ? static_cast<T>(s.wd) * p : T(0)));
}

template <class T>
inline void sgd_step(T& p, T g, T& buf, float lr, float momentum, float wd, bool nesterov) {
  g += static_cast<T>(wd) * p;
  buf = static_cast<T>(momentum) * buf + g;
  p -= static_cast<T>(lr) * (nesterov ? g + static_cast<T>(momentum) * buf : buf);
}

}  // namespace stag::optim

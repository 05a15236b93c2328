// The scalar functions behind the unary ops and their derivatives, shared by the reference
// kernels and the own CPU kernels so that every backend agrees on the formulas.
#pragma once

#include <cmath>

#include <stag/ops/hd.hpp>

#include <stag/ops/op_list.hpp>

namespace stag::unary_math {

inline constexpr double kSqrt2OverPi = 0.7978845608028654;
inline constexpr double kGeluTanhC = 0.044715;

// NOTE: PyTorch's remainder: fmod keeps the sign of x; a nonzero result of the other sign than
// m moves by m. In f32 a tiny negative x then rounds to m itself (-1e-9 mod 1 = 1.0f), as in
// PyTorch.
template <class T>
STAG_HD T remainder(T x, T m) {
  const T r = std::fmod(x, m);
  return r != T(0) && ((r < T(0)) != (m < T(0))) ? r + m : r;
}

// p and q: the op's attrs f[0] and f[1] (pow's exponent, elu's alpha, clamp's bounds, mod's m).
template <class T>
STAG_HD T forward(OpId op, T x, double p, double q = 0) {
  switch (op) {
    case OpId::neg:
      return -x;
    case OpId::exp:
      return std::exp(x);
    case OpId::log:
      return std::log(x);
    case OpId::sqrt:
      return std::sqrt(x);
    case OpId::rsqrt:
      return T(1) / std::sqrt(x);
    case OpId::pow_scalar:
      return std::pow(x, static_cast<T>(p));
    case OpId::abs:
      return std::abs(x);
    case OpId::relu:
      return x < T(0) ? T(0) : x;  // NOTE: NaN stays NaN, as in PyTorch
    case OpId::gelu:
      return T(0.5) * x * (T(1) + std::erf(x / std::sqrt(T(2))));
    case OpId::gelu_tanh: {
      const T u = static_cast<T>(kSqrt2OverPi) * (x + static_cast<T>(kGeluTanhC) * x * x * x);
      return T(0.5) * x * (T(1) + std::tanh(u));
    }
    case OpId::silu:
      return x / (T(1) + std::exp(-x));
    case OpId::sigmoid:
      return T(1) / (T(1) + std::exp(-x));
    case OpId::tanh:
      return std::tanh(x);
    case OpId::sin:
      return std::sin(x);
    case OpId::cos:
      return std::cos(x);
    case OpId::elu:
      return x > T(0) ? x : static_cast<T>(p) * std::expm1(x);
    case OpId::floor:
      return std::floor(x);
    case OpId::clamp: {  // NOTE: NaN fails both comparisons and stays NaN
      const T lo = static_cast<T>(p), hi = static_cast<T>(q);
      return x < lo ? lo : (x > hi ? hi : x);
    }
    case OpId::mod:
      return remainder(x, static_cast<T>(p));
    default:
      return x;
  }
}

// d forward(x) / dx times g, given x and y = forward(x).
// NOTE: relu and abs have a kink at 0; their derivative there is taken as 0. clamp's is 1 at
// its bounds (PyTorch's choice).
template <class T>
STAG_HD T backward(OpId op, T x, T y, T g, double p, double q = 0) {
  switch (op) {
    case OpId::neg:
      return -g;
    case OpId::exp:
      return g * y;
    case OpId::log:
      return g / x;
    case OpId::sqrt:
      return g * T(0.5) / y;
    case OpId::rsqrt:
      return g * T(-0.5) * y * y * y;
    case OpId::pow_scalar:
      return g * static_cast<T>(p) * std::pow(x, static_cast<T>(p - 1));
    case OpId::abs:
      return x > T(0) ? g : (x < T(0) ? -g : T(0));
    case OpId::relu:
      return x > T(0) ? g : T(0);
    case OpId::gelu: {
      const T cdf = T(0.5) * (T(1) + std::erf(x / std::sqrt(T(2))));
      const T pdf = std::exp(T(-0.5) * x * x) / std::sqrt(T(2) * T(M_PI));
      return g * (cdf + x * pdf);
    }
    case OpId::gelu_tanh: {
      const T k = static_cast<T>(kSqrt2OverPi), c = static_cast<T>(kGeluTanhC);
      const T t = std::tanh(k * (x + c * x * x * x));
      return g *
             (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * k * (T(1) + T(3) * c * x * x));
    }
    case OpId::silu: {
      const T s = T(1) / (T(1) + std::exp(-x));
      return g * s * (T(1) + x * (T(1) - s));
    }
    case OpId::sigmoid:
      return g * y * (T(1) - y);
    case OpId::tanh:
      return g * (T(1) - y * y);
    case OpId::sin:
      return g * std::cos(x);
    case OpId::cos:
      return -g * std::sin(x);
    case OpId::elu:
      return x > T(0) ? g : g * (y + static_cast<T>(p));
    case OpId::clamp:
      return x >= static_cast<T>(p) && x <= static_cast<T>(q) ? g : T(0);
    case OpId::floor:
      return T(0);
    default:
      return g;
  }
}

}  // namespace stag::unary_math

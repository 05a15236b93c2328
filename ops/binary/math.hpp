// The scalar formulas of minimum and maximum, shared by the reference kernels and the own CPU
// loop (as ops/unary/math.hpp is for the unary ops), so that every backend agrees on them.
#pragma once

#include <cmath>

#include <stag/ops/hd.hpp>
#include <type_traits>

namespace stag::binary_math {

// True for a NaN float; never for integers.
template <class T>
STAG_HD bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}
// NOTE: a NaN operand gives NaN, as in PyTorch (a plain `y < x ? y : x` would drop a NaN y); a
// tie gives x, the first operand (which also gets the whole gradient).
template <class T>
STAG_HD T minimum(T x, T y) {
  return is_nan(x) ? x : (is_nan(y) || y < x ? y : x);
}
template <class T>
STAG_HD T maximum(T x, T y) {
  return is_nan(x) ? x : (is_nan(y) || y > x ? y : x);
}

}  // namespace stag::binary_math

// Dim arithmetic for model code: read a dim of a Shape type, and split a dim into heads
// (static: it must divide; symbolic: heads must be one of its factors), at compile time.
#pragma once

#include <tuple>

#include <stag/graph/shape.hpp>

namespace stag {

// Named symbols the bundled models use.
namespace dims {
inline constexpr auto batch = sym<"batch">;
inline constexpr auto seq = sym<"seq">;
inline constexpr auto src_seq = sym<"src_seq">;
inline constexpr auto tgt_seq = sym<"tgt_seq">;
inline constexpr auto masked = sym<"masked">;  // positions a masked-LM batch predicts
}  // namespace dims

// The dim at `Axis` (negative counts from the end) of a Shape type, as a dim value.
template <class S, int Axis>
inline constexpr auto dim_at = []<auto... Ds>(Shape<Ds...>) {
  constexpr int n = static_cast<int>(sizeof...(Ds));
  static_assert(Axis >= -n && Axis < n, "stag::dim_at: axis out of range");
  return std::get<(Axis < 0 ? Axis + n : Axis)>(std::tuple{Ds...});
}
(S{});

template <class S>
inline constexpr auto last_dim = dim_at<S, -1>;

namespace detail {
struct Quotient {
  DimV dim;
  bool ok;
};
constexpr Quotient dim_divide(const DimV& a, const DimV& b) {
  if (b.coef <= 0 || a.coef % b.coef != 0) return {{}, false};
  DimV q;
  q.coef = a.coef / b.coef;
  bool used[kMaxDimSyms] = {};
  for (int j = 0; j < b.nsym; ++j) {
    bool found = false;
    for (int i = 0; i < a.nsym && !found; ++i)
      if (!used[i] && a.sym[i] == b.sym[j]) used[i] = found = true;
    if (!found) return {{}, false};
  }
  for (int i = 0; i < a.nsym; ++i)
    if (!used[i]) q.sym[q.nsym++] = a.sym[i];
  return {q, true};
}
}  // namespace detail

// D / H as a dim value: `head_dim = dim_quotient<d_model, heads>`.
template <auto D, auto H>
inline constexpr auto dim_quotient = [] {
  constexpr detail::Quotient q = detail::dim_divide(dim_value<D>(), dim_value<H>());
  static_assert(
      q.ok,
      "stag: a model dim does not split into the number of heads (d_model must be a multiple "
      "of heads; a symbolic d_model must have heads as a factor)");
  if constexpr (q.ok) {
    using L = typename detail::concat_syms<typename detail::syms_of_dim<D>::type>::type;
    return detail::dim_from_value<q.dim, L>();
  } else {
    return 1;
  }
}();

// Constant-expression math for attributes computed while graphs are built (the <cmath>
// functions are not constexpr in C++20).
namespace cx {
constexpr double sqrt(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 64; ++i) r = 0.5 * (r + x / r);
  return r;
}
constexpr double log(double x) {  // x > 0
  int k = 0;
  while (x > 2) {
    x /= 2.718281828459045;
    ++k;
  }
  while (x < 0.5) {
    x *= 2.718281828459045;
    --k;
  }
  const double y = (x - 1) / (x + 1), y2 = y * y;  // log x = 2 atanh((x-1)/(x+1))
  double term = y, sum = 0;
  for (int n = 1; n < 200; n += 2) {
    sum += term / n;
    term *= y2;
  }
  return 2 * sum + k;
}
}  // namespace cx

}  // namespace stag

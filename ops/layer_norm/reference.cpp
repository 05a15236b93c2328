// Reference kernels of layer_norm and layer_norm_backward: one row (the normalised trailing
// dims, contiguous) at a time, statistics and sums in double whatever the element type.
#include <cmath>

#include <stag/ops/kernel.hpp>
#include <stag/ops/layer_norm/layer_norm.hpp>

namespace stag {
namespace {

struct RowStats {
  double mean = 0;
  double rstd = 0;
};

// The number of elements in one normalised row: the product of x's last k dims.
std::int64_t row_length(const KernelArgs& a, int k) {
  const TensorView& x = a.in[0];
  if (k < 1 || k > x.rank)
    throw Error("stag: internal error: " + a.name() + ": bad number of normalised dims");
  std::int64_t n = 1;
  for (int d = x.rank - k; d < x.rank; ++d) n *= x.dims[d];
  return n;
}

// NOTE: mean and variance in double, and the variance by two passes (mean of squared
// deviations), not E[x^2] - E[x]^2, which cancels catastrophically when |mean| >> std.
// NOTE: eps inside the square root: rstd = 1 / sqrt(var + eps). With eps = 0, a constant row
// has var = 0 and gives NaN (as in PyTorch); any eps > 0 makes it 0.
template <class T>
RowStats row_stats(const T* x, std::int64_t n, double eps) {
  RowStats s;
  if (n == 0) return s;
  double sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
  s.mean = sum / static_cast<double>(n);
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - s.mean;
    ss += d * d;
  }
  s.rstd = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  return s;
}

template <class T>
void forward(const KernelArgs& a) {
  const double eps = a.attr().f[0];
  const std::int64_t n = row_length(a, static_cast<int>(a.attr().i[0]));
  const std::int64_t rows = n == 0 ? 0 : a.in[0].numel() / n;
  const bool affine = a.in.size() == 3;
  const T* x = a.in[0].as<const T>();
  const T* w = affine ? a.in[1].as<const T>() : nullptr;
  const T* b = affine ? a.in[2].as<const T>() : nullptr;
  T* y = a.out.as<T>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    const RowStats s = row_stats(xr, n, eps);
    for (std::int64_t i = 0; i < n; ++i) {
      double v = (static_cast<double>(xr[i]) - s.mean) * s.rstd;
      if (affine) v = v * static_cast<double>(w[i]) + static_cast<double>(b[i]);
      yr[i] = static_cast<T>(v);
    }
  }
}

// With xh = (x - mean) * rstd and gh = g * w: dx = rstd * (gh - mean(gh) - xh * mean(gh * xh)).
template <class T>
void backward(const KernelArgs& a) {
  const double eps = a.attr().f[0];
  const std::int64_t n = row_length(a, static_cast<int>(a.attr().i[0]));
  const std::int64_t rows = n == 0 ? 0 : a.in[0].numel() / n;
  const bool affine = a.in.size() == 3;
  const T* x = a.in[0].as<const T>();
  const T* w = affine ? a.in[1].as<const T>() : nullptr;
  const T* g = a.in[affine ? 2 : 1].as<const T>();
  T* dx = a.out.as<T>();
  const double inv_n = n == 0 ? 0.0 : 1.0 / static_cast<double>(n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* gr = g + r * n;
    const RowStats s = row_stats(xr, n, eps);
    auto gh = [&](std::int64_t i) {
      return static_cast<double>(gr[i]) * (affine ? static_cast<double>(w[i]) : 1.0);
    };
    double sum_gh = 0, sum_ghxh = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double xh = (static_cast<double>(xr[i]) - s.mean) * s.rstd;
      sum_gh += gh(i);
      sum_ghxh += gh(i) * xh;
    }
    for (std::int64_t i = 0; i < n; ++i) {
      const double xh = (static_cast<double>(xr[i]) - s.mean) * s.rstd;
      dx[r * n + i] = static_cast<T>(s.rstd * (gh(i) - sum_gh * inv_n - xh * sum_ghxh * inv_n));
    }
  }
}

}  // namespace

void OpDef<OpId::layer_norm>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { forward<decltype(z)>(a); });
}
void OpDef<OpId::layer_norm_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { backward<decltype(z)>(a); });
}

}  // namespace stag

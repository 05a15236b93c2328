// Reference kernels of rms_norm and rms_norm_backward: one row (the normalised trailing dims,
// contiguous) at a time, the mean square and the sums in double whatever the element type.
#include <cmath>

#include <stag/ops/kernel.hpp>
#include <stag/ops/rms_norm/rms_norm.hpp>

namespace stag {
namespace {

std::int64_t row_length(const KernelArgs& a, int k) {
  const TensorView& x = a.in[0];
  if (k < 1 || k > x.rank)
    throw Error("stag: internal error: " + a.name() + ": bad number of normalised dims");
  std::int64_t n = 1;
  for (int d = x.rank - k; d < x.rank; ++d) n *= x.dims[d];
  return n;
}

// NOTE: the mean square is accumulated in double, and eps sits inside the square root:
// rstd = 1 / sqrt(mean(x^2) + eps), as in LLaMA and PyTorch's RMSNorm. An all-zero row then
// gives y = 0 (not NaN) whenever eps > 0.
template <class T>
double row_rstd(const T* x, std::int64_t n, double eps) {
  if (n == 0) return 0;
  double ss = 0;
  for (std::int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  return 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
}

template <class T>
void forward(const KernelArgs& a) {
  const double eps = a.attr().f[0];
  const std::int64_t n = row_length(a, static_cast<int>(a.attr().i[0]));
  const std::int64_t rows = n == 0 ? 0 : a.in[0].numel() / n;
  const bool weighted = a.in.size() == 2;
  const T* x = a.in[0].as<const T>();
  const T* w = weighted ? a.in[1].as<const T>() : nullptr;
  T* y = a.out.as<T>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const double rstd = row_rstd(xr, n, eps);
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(xr[i]) * rstd;
      y[r * n + i] = static_cast<T>(weighted ? v * static_cast<double>(w[i]) : v);
    }
  }
}

// With xh = x * rstd and gh = g * w: dx = rstd * (gh - xh * mean(gh * xh)).
template <class T>
void backward(const KernelArgs& a) {
  const double eps = a.attr().f[0];
  const std::int64_t n = row_length(a, static_cast<int>(a.attr().i[0]));
  const std::int64_t rows = n == 0 ? 0 : a.in[0].numel() / n;
  const bool weighted = a.in.size() == 3;
  const T* x = a.in[0].as<const T>();
  const T* w = weighted ? a.in[1].as<const T>() : nullptr;
  const T* g = a.in[weighted ? 2 : 1].as<const T>();
  T* dx = a.out.as<T>();
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * n;
    const T* gr = g + r * n;
    const double rstd = row_rstd(xr, n, eps);
    auto gh = [&](std::int64_t i) {
      return static_cast<double>(gr[i]) * (weighted ? static_cast<double>(w[i]) : 1.0);
    };
    double sum_ghxh = 0;
    for (std::int64_t i = 0; i < n; ++i) sum_ghxh += gh(i) * static_cast<double>(xr[i]) * rstd;
    const double mean_ghxh = sum_ghxh / static_cast<double>(n);
    for (std::int64_t i = 0; i < n; ++i)
      dx[r * n + i] =
          static_cast<T>(rstd * (gh(i) - static_cast<double>(xr[i]) * rstd * mean_ghxh));
  }
}

}  // namespace

void OpDef<OpId::rms_norm>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { forward<decltype(z)>(a); });
}
void OpDef<OpId::rms_norm_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { backward<decltype(z)>(a); });
}

}  // namespace stag

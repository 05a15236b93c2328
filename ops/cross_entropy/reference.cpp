// Reference kernels of cross_entropy and cross_entropy_backward: one row of C logits per
// label, log-sum-exp and sums in double whatever the element type. Both check every label.
// Label smoothing e: (1 - e) * (-log p[label]) + e * mean over classes of (-log p), term by
// term (the CPU kernel uses the folded form lse - (1 - e) x[label] - e mean(x)).
#include <cmath>
#include <limits>
#include <string>

#include <stag/ops/cross_entropy/cross_entropy.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string position_text(const TensorView& v, std::int64_t flat) {
  std::int64_t idx[kMaxRank] = {};
  for (int d = v.rank - 1; d >= 0; --d) {
    idx[d] = v.dims[d] == 0 ? 0 : flat % v.dims[d];
    flat = v.dims[d] == 0 ? 0 : flat / v.dims[d];
  }
  std::string s = "[";
  for (int d = 0; d < v.rank; ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

// Label number `r`, or -1 when it equals ignore_index; anything else outside [0, classes)
// throws. Labels are read as integers (never through double).
std::int64_t checked_label(const KernelArgs& a, const TensorView& labels, std::int64_t r,
                           std::int64_t classes) {
  std::int64_t y = 0;
  if (labels.dtype == DType::i32)
    y = labels.as<const std::int32_t>()[r];
  else if (labels.dtype == DType::i64)
    y = labels.as<const std::int64_t>()[r];
  else
    throw Error("stag: cross_entropy '" + a.name() + "': labels must be i32 or i64, got " +
                std::string(dtype_name(labels.dtype)));
  const std::int64_t ignore = a.attr().i[0];
  if (y == ignore) return -1;
  if (y < 0 || y >= classes)
    throw Error("stag: cross_entropy '" + a.name() + "': label " + std::to_string(y) + " at " +
                position_text(labels, r) + " is outside [0, " + std::to_string(classes) +
                ") and is not ignore_index (" + std::to_string(ignore) + ")");
  return y;
}

// NOTE: log-sum-exp with the row maximum subtracted, so exp never overflows (logits of 1000
// are fine). A row of all -inf has no maximum to subtract: its log-sum-exp is -inf.
template <class T>
double row_max(const T* x, std::int64_t n) {
  double mx = -kInf;
  for (std::int64_t i = 0; i < n; ++i) mx = std::fmax(mx, static_cast<double>(x[i]));
  return mx;
}
template <class T>
double log_sum_exp(const T* x, std::int64_t n, double mx) {
  if (mx == -kInf) return -kInf;
  double z = 0;
  for (std::int64_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(x[i]) - mx);
  return mx + std::log(z);
}

template <class T>
void forward(const KernelArgs& a) {
  const TensorView& logits = a.in[0];
  const TensorView& labels = a.in[1];
  const std::int64_t classes = logits.dims[logits.rank - 1];
  const std::int64_t rows = labels.numel();
  const T* x = logits.as<const T>();
  const double eps = a.attr().f[0];
  double total = 0;
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t y = checked_label(a, labels, r, classes);
    if (y < 0) continue;
    const T* row = x + r * classes;
    const double xy = static_cast<double>(row[y]);
    const double lse = log_sum_exp(row, classes, row_max(row, classes));
    // NOTE: a label whose logit is -inf has probability 0: its loss is +inf (not -inf - -inf);
    // with smoothing, so does any class's.
    double loss = xy == -kInf ? kInf : lse - xy;
    if (eps > 0) {
      double smooth = 0;  // mean over the classes of -log p
      for (std::int64_t i = 0; i < classes; ++i) {
        const double xi = static_cast<double>(row[i]);
        smooth += xi == -kInf ? kInf : lse - xi;
      }
      loss = (1 - eps) * loss + eps * smooth / static_cast<double>(classes);
    }
    total += loss;
    ++count;
  }
  // NOTE: no kept position: the loss is 0, not 0 / 0.
  a.out.as<T>()[0] = static_cast<T>(count == 0 ? 0.0 : total / static_cast<double>(count));
}

template <class T>
void backward(const KernelArgs& a) {
  const TensorView& logits = a.in[0];
  const TensorView& labels = a.in[1];
  const std::int64_t classes = logits.dims[logits.rank - 1];
  const std::int64_t rows = labels.numel();
  const T* x = logits.as<const T>();
  const double g = static_cast<double>(a.in[2].as<const T>()[0]);
  const double eps = a.attr().f[0];
  T* dx = a.out.as<T>();
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < rows; ++r) count += checked_label(a, labels, r, classes) >= 0;
  const double scale = count == 0 ? 0.0 : g / static_cast<double>(count);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t y = checked_label(a, labels, r, classes);
    const T* row = x + r * classes;
    T* drow = dx + r * classes;
    if (y < 0) {  // ignored position: a zero row
      for (std::int64_t i = 0; i < classes; ++i) drow[i] = T(0);
      continue;
    }
    // NOTE: the softmax of an all -inf row is taken as zeros (as the softmax op does), so the
    // row's gradient is -onehot * scale rather than NaN.
    const double mx = row_max(row, classes);
    const double lse = log_sum_exp(row, classes, mx);
    for (std::int64_t i = 0; i < classes; ++i) {
      const double p = mx == -kInf ? 0.0 : std::exp(static_cast<double>(row[i]) - lse);
      const double target = (i == y ? 1.0 - eps : 0.0) + eps / static_cast<double>(classes);
      drow[i] = static_cast<T>((p - target) * scale);
    }
  }
}

}  // namespace

void OpDef<OpId::cross_entropy>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { forward<decltype(z)>(a); });
}
void OpDef<OpId::cross_entropy_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { backward<decltype(z)>(a); });
}

}  // namespace stag

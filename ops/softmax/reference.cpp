// Reference kernels of softmax, log_softmax and their backward ops, row by row along the axis.
#include <cmath>
#include <limits>

#include <stag/ops/kernel.hpp>
#include <stag/ops/softmax/softmax.hpp>

namespace stag {
namespace {

// Calls fn(base_offset, stride, length) for every row of a contiguous tensor along `axis`.
template <class Fn>
void for_each_row(const TensorView& v, int axis, Fn fn) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= v.dims[d];
  for (int d = axis + 1; d < v.rank; ++d) inner *= v.dims[d];
  const std::int64_t len = v.dims[axis];
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) fn(o * len * inner + i, inner, len);
}

template <class T>
void softmax_rows(const KernelArgs& a, bool log) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const T* x = a.in[0].as<const T>();
  T* y = a.out.as<T>();
  const bool masked = a.in.size() > 1;
  std::int64_t mstr[kMaxRank] = {};
  if (masked) kernel::broadcast_strides(a.in[1], a.out.rank, a.out.dims, mstr);
  const bool* m = masked ? a.in[1].as<const bool>() : nullptr;
  auto keep = [&](std::int64_t flat) {
    if (!masked) return true;
    std::int64_t off = 0, rem = flat;
    for (int d = a.out.rank - 1; d >= 0; --d) {
      off += (rem % a.out.dims[d]) * mstr[d];
      rem /= a.out.dims[d];
    }
    return m[off];
  };
  const double ninf = -std::numeric_limits<double>::infinity();
  for_each_row(a.out, axis, [&](std::int64_t base, std::int64_t stride, std::int64_t len) {
    double mx = ninf;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = base + k * stride;
      if (keep(i) && static_cast<double>(x[i]) > mx) mx = x[i];
    }
    if (mx == ninf) {  // NOTE: fully masked (or all -inf) row: zeros, not NaN.
      for (std::int64_t k = 0; k < len; ++k) y[base + k * stride] = log ? T(ninf) : T(0);
      return;
    }
    double z = 0;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = base + k * stride;
      if (keep(i)) z += std::exp(static_cast<double>(x[i]) - mx);
    }
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = base + k * stride;
      const double v = static_cast<double>(x[i]) - mx;
      if (log)
        y[i] = static_cast<T>(keep(i) ? v - std::log(z) : ninf);
      else
        y[i] = static_cast<T>(keep(i) ? std::exp(v) / z : 0.0);
    }
  });
}

template <class T>
void softmax_backward_rows(const KernelArgs& a, bool log) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const T* y = a.in[0].as<const T>();
  const T* g = a.in[1].as<const T>();
  T* dx = a.out.as<T>();
  for_each_row(a.out, axis, [&](std::int64_t base, std::int64_t stride, std::int64_t len) {
    double s = 0;
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = base + k * stride;
      s += log ? static_cast<double>(g[i]) : static_cast<double>(g[i]) * static_cast<double>(y[i]);
    }
    for (std::int64_t k = 0; k < len; ++k) {
      const std::int64_t i = base + k * stride;
      // NOTE: log_softmax of a fully masked row is -inf; exp(-inf) = 0 keeps dx finite.
      dx[i] = log ? static_cast<T>(g[i] - std::exp(static_cast<double>(y[i])) * s)
                  : static_cast<T>(static_cast<double>(y[i]) * (static_cast<double>(g[i]) - s));
    }
  });
}
}  // namespace

void OpDef<OpId::softmax>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { softmax_rows<decltype(z)>(a, false); });
}
void OpDef<OpId::log_softmax>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { softmax_rows<decltype(z)>(a, true); });
}
void OpDef<OpId::softmax_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { softmax_backward_rows<decltype(z)>(a, false); });
}
void OpDef<OpId::log_softmax_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { softmax_backward_rows<decltype(z)>(a, true); });
}

}  // namespace stag

// Reference kernel of rope: a cos/sin table per (position, pair) computed in double, then one
// rotation per pair (i, i + Dh/2) of every row. Positions are s + offset, or positions[s] +
// offset when the op has a positions input.
#include <cmath>
#include <string>
#include <vector>

#include <stag/ops/kernel.hpp>
#include <stag/ops/rope/rope.hpp>

namespace stag {

void OpDef<OpId::rope>::reference(const KernelArgs& a) {
  const TensorView& x = a.in[0];
  const double theta = a.attr().f[0];
  const std::int64_t offset = a.attr().i[0];
  const double sign = a.attr().i[1] != 0 ? -1.0 : 1.0;
  const std::int64_t seq = x.dims[x.rank - 2], dh = x.dims[x.rank - 1];
  if (dh % 2 != 0)
    throw Error("stag: " + a.name() + ": rope needs an even head dim (the last dim), got " +
                std::to_string(dh));
  if (!(theta > 0.0))
    throw Error("stag: " + a.name() + ": rope theta = " + std::to_string(theta) + " is not > 0");
  const std::int64_t half = dh / 2;
  const std::int64_t rows = seq * dh == 0 ? 0 : x.numel() / (seq * dh);
  // Positions [B, S] give each batch row its own table; [S] or none, one table for all rows.
  const std::int64_t tables = a.in.size() > 1 && a.in[1].rank == 2 ? a.in[1].dims[0] : 1;
  const std::int64_t rows_per_table = tables > 0 ? rows / tables : rows;
  // NOTE: angles are computed in double: p * theta^(-2i/Dh) loses digits in f32 at large p.
  std::vector<double> inv_freq(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i)
    inv_freq[static_cast<std::size_t>(i)] =
        std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
  std::vector<double> cos_t(static_cast<std::size_t>(tables * seq * half)), sin_t(cos_t.size());
  for (std::int64_t s = 0; s < tables * seq; ++s)
    for (std::int64_t i = 0; i < half; ++i) {
      const long double p =
          a.in.size() > 1 ? kernel::load_exact(a.in[1], s) : static_cast<long double>(s);
      const double angle = sign * static_cast<double>(p + static_cast<long double>(offset)) *
                           inv_freq[static_cast<std::size_t>(i)];
      cos_t[static_cast<std::size_t>(s * half + i)] = std::cos(angle);
      sin_t[static_cast<std::size_t>(s * half + i)] = std::sin(angle);
    }
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.as<const T>();
    T* out = a.out.as<T>();
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t s = 0; s < seq; ++s) {
        const std::int64_t base = (r * seq + s) * dh;
        const std::int64_t row = (r / rows_per_table) * seq + s;  // the table row
        for (std::int64_t i = 0; i < half; ++i) {
          const double c = cos_t[static_cast<std::size_t>(row * half + i)];
          const double sn = sin_t[static_cast<std::size_t>(row * half + i)];
          const double x1 = in[base + i], x2 = in[base + i + half];
          out[base + i] = static_cast<T>(x1 * c - x2 * sn);
          out[base + i + half] = static_cast<T>(x2 * c + x1 * sn);
        }
      }
  });
}

}  // namespace stag

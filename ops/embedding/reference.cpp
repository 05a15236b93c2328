// Reference kernels of embedding (row copies) and embedding_backward (scatter-add). Both check
// every id against the table's row count before using it.
#include <string>
#include <vector>

#include <stag/ops/embedding/embedding.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace {

// The multi-index of element `flat` of a row-major tensor, as text: "[3, 17]".
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

// Id number `i` (read as an integer, never through double, so large i64 ids stay exact),
// checked against [0, rows).
std::int64_t checked_id(const KernelArgs& a, const TensorView& ids, std::int64_t i,
                        std::int64_t rows) {
  std::int64_t id = 0;
  if (ids.dtype == DType::i32)
    id = ids.as<const std::int32_t>()[i];
  else if (ids.dtype == DType::i64)
    id = ids.as<const std::int64_t>()[i];
  else
    throw Error("stag: embedding '" + a.name() + "': ids must be i32 or i64, got " +
                std::string(dtype_name(ids.dtype)));
  if (id < 0 || id >= rows)
    throw Error("stag: embedding '" + a.name() + "': token id " + std::to_string(id) + " at " +
                position_text(ids, i) + " is outside [0, " + std::to_string(rows) + ")");
  return id;
}

template <class T>
void forward(const KernelArgs& a) {
  const TensorView& ids = a.in[0];
  const TensorView& table = a.in[1];
  const std::int64_t rows = table.dims[0], d = table.dims[1];
  const T* tab = table.as<const T>();
  T* y = a.out.as<T>();
  const std::int64_t n = ids.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = checked_id(a, ids, i, rows);
    for (std::int64_t k = 0; k < d; ++k) y[i * d + k] = tab[id * d + k];
  }
}

// NOTE: repeated ids accumulate; the sums are kept in double, so the result does not depend on
// how many times (or in which order) an id occurs beyond double rounding.
template <class T>
void backward(const KernelArgs& a) {
  const TensorView& ids = a.in[0];
  const T* g = a.in[1].as<const T>();
  const std::int64_t rows = a.out.dims[0], d = a.out.dims[1];
  std::vector<double> acc(static_cast<std::size_t>(rows * d), 0.0);
  const std::int64_t n = ids.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t id = checked_id(a, ids, i, rows);
    for (std::int64_t k = 0; k < d; ++k)
      acc[static_cast<std::size_t>(id * d + k)] += static_cast<double>(g[i * d + k]);
  }
  T* out = a.out.as<T>();
  for (std::int64_t j = 0; j < rows * d; ++j)
    out[j] = static_cast<T>(acc[static_cast<std::size_t>(j)]);
}

}  // namespace

void OpDef<OpId::embedding>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { forward<decltype(z)>(a); });
}
void OpDef<OpId::embedding_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { backward<decltype(z)>(a); });
}

}  // namespace stag

// Reference kernels of embedding (row copies) and embedding_backward (scatter-add). Both check
// every id against the table's row count before using it.
#include <algorithm>
#include <string>
#include <utility>
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
  if (id >= 0 && id < rows) return id;
  // Learned positions (ids from `positions`): the input is longer than the table.
  const Node& from = a.g.node(a.n().in[0]);
  if (op_id(from.op) == OpId::positions)
    throw Error("stag: embedding '" + a.name() + "': the sequence has " +
                std::to_string(ids.numel()) + " positions but the position table '" +
                a.g.name(a.n().in[1]) + "' has " + std::to_string(rows) + " rows (position " +
                std::to_string(id) + " is outside it); cut the inputs to at most " +
                std::to_string(rows) + " tokens or build the model with a longer table");
  throw Error("stag: embedding '" + a.name() + "': token id " + std::to_string(id) + " at " +
              position_text(ids, i) + " is outside [0, " + std::to_string(rows) + ")");
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

// NOTE: repeated ids accumulate (a scatter-add), in double and in position order, so the
// result is deterministic and does not lose f32 precision on frequent tokens. Positions are
// grouped by id first, which keeps the extra memory at O(positions + D), not O(V * D).
template <class T>
void backward(const KernelArgs& a) {
  const TensorView& ids = a.in[0];
  const T* g = a.in[1].as<const T>();
  const std::int64_t rows = a.out.dims[0], d = a.out.dims[1];
  const std::int64_t n = ids.numel();
  std::vector<std::pair<std::int64_t, std::int64_t>> by_id(
      static_cast<std::size_t>(n));  // (id, position)
  for (std::int64_t i = 0; i < n; ++i)
    by_id[static_cast<std::size_t>(i)] = {checked_id(a, ids, i, rows), i};
  std::sort(by_id.begin(), by_id.end());
  T* out = a.out.as<T>();
  for (std::int64_t j = 0; j < rows * d; ++j) out[j] = T(0);  // rows no id names stay zero
  std::vector<double> acc(static_cast<std::size_t>(d));
  for (std::size_t lo = 0; lo < by_id.size();) {
    const std::int64_t id = by_id[lo].first;
    std::fill(acc.begin(), acc.end(), 0.0);
    std::size_t hi = lo;
    for (; hi < by_id.size() && by_id[hi].first == id; ++hi)
      for (std::int64_t k = 0; k < d; ++k)
        acc[static_cast<std::size_t>(k)] += static_cast<double>(g[by_id[hi].second * d + k]);
    for (std::int64_t k = 0; k < d; ++k)
      out[id * d + k] = static_cast<T>(acc[static_cast<std::size_t>(k)]);
    lo = hi;
  }
}

}  // namespace

void OpDef<OpId::embedding>::reference(const KernelArgs& a) {
  if (a.out.dtype == DType::bf16) return forward<std::uint16_t>(a);  // rows copied bit for bit
  kernel::with_float(a.out.dtype, [&](auto z) { forward<decltype(z)>(a); });
}
void OpDef<OpId::embedding_backward>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) { backward<decltype(z)>(a); });
}

}  // namespace stag

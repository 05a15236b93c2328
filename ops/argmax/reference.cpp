// Reference kernel of argmax: one scan per output element, first index on ties, NaN wins.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include <stag/ops/argmax/argmax.hpp>
#include <stag/ops/binary/math.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
using binary_math::is_nan;

void OpDef<OpId::argmax>::reference(const KernelArgs& a) {
  const TensorView& x = a.in[0];
  const int axis = static_cast<int>(a.attr().i[0]);
  const std::int64_t len = x.dims[axis];
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dims[d];
  for (int d = axis + 1; d < x.rank; ++d) inner *= x.dims[d];
  if (outer * inner == 0) return;  // nothing to compute
  if (len == 0)
    throw Error("stag: " + a.name() + ": argmax over dim " + std::to_string(axis) +
                ", which is empty (size 0)");
  if (len > std::numeric_limits<std::int32_t>::max())
    throw Error("stag: " + a.name() + ": argmax over dim " + std::to_string(axis) + " of size " +
                std::to_string(len) + ", whose indices do not fit in i32");
  std::int32_t* out = a.out.as<std::int32_t>();
  auto scan = [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.as<const T>();
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* row = in + o * len * inner + i;
        T best = row[0];
        std::int64_t at = 0;
        for (std::int64_t k = 1; k < len && !is_nan(best); ++k) {
          const T v = row[k * inner];
          if (v > best || is_nan(v)) {
            best = v;
            at = k;
          }
        }
        out[o * inner + i] = static_cast<std::int32_t>(at);
      }
  };
  switch (x.dtype) {
    case DType::f32:
      scan(float{});
      break;
    case DType::f64:
      scan(double{});
      break;
    case DType::i32:
      scan(std::int32_t{});
      break;
    case DType::i64:
      scan(std::int64_t{});
      break;
    default:
      throw Error("stag: " + a.name() + ": argmax of an unsupported dtype");
  }
}

}  // namespace stag

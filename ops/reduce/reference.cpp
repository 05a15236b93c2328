// Reference kernels of sum, mean and max: each output element folds its reduced slice,
// accumulating in double.
#include <cmath>
#include <limits>

#include <stag/ops/kernel.hpp>
#include <stag/ops/reduce/reduce.hpp>

namespace stag {
namespace {
enum class Fold { sum, mean, max };

void reduce(const KernelArgs& a, Fold fold) {
  const TensorView& x = a.in[0];
  const auto mask = static_cast<std::uint32_t>(a.attr().i[0]);
  // Output index (with keepdim) -> input offset; split x's dims into kept and reduced.
  std::int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  std::int64_t red_dims[kMaxRank] = {}, red_strides[kMaxRank] = {};
  int nk = 0, nr = 0;
  std::int64_t count = 1;
  for (int d = 0; d < x.rank; ++d) {
    if (mask & (1u << d)) {
      red_dims[nr] = x.dims[d];
      red_strides[nr++] = x.strides[d];
      count *= x.dims[d];
    } else {
      kept_dims[nk] = x.dims[d];
      kept_strides[nk++] = x.strides[d];
    }
  }
  std::int64_t outer = 1;
  for (int d = 0; d < nk; ++d) outer *= kept_dims[d];
  for (std::int64_t o = 0; o < outer; ++o) {
    std::int64_t base = 0, rem = o;
    for (int d = nk - 1; d >= 0; --d) {
      base += (rem % kept_dims[d]) * kept_strides[d];
      rem /= kept_dims[d];
    }
    double acc = fold == Fold::max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (std::int64_t r = 0; r < count; ++r) {
      std::int64_t off = base, rr = r;
      for (int d = nr - 1; d >= 0; --d) {
        off += (rr % red_dims[d]) * red_strides[d];
        rr /= red_dims[d];
      }
      const double v = kernel::load(x, off);
      if (fold == Fold::max) {
        if (v > acc || std::isnan(v)) acc = v;
      } else {
        acc += v;
      }
    }
    if (fold == Fold::mean) acc /= static_cast<double>(count);
    kernel::store(a.out, o, acc);
  }
}
}  // namespace

void OpDef<OpId::sum>::reference(const KernelArgs& a) { reduce(a, Fold::sum); }
void OpDef<OpId::mean>::reference(const KernelArgs& a) { reduce(a, Fold::mean); }
void OpDef<OpId::max>::reference(const KernelArgs& a) { reduce(a, Fold::max); }

}  // namespace stag

// Reference kernels of sum, mean and max: each output element folds its reduced slice.
// Floats accumulate in double; integers fold exactly in their own type (sums wrap modulo
// 2^bits like repeated +, computed unsigned so that overflow is never undefined behaviour).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <stag/ops/kernel.hpp>
#include <stag/ops/reduce/reduce.hpp>

namespace stag {
namespace {
enum class Fold { sum, mean, max };

// Calls visit(o, offsets) for every output element o, where offsets(fn) calls fn(off) for the
// input offset of each element of o's reduced slice.
template <class Visit>
void for_each_slice(const TensorView& x, std::uint32_t mask, Visit visit) {
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
    visit(o, count, [&](auto fn) {
      for (std::int64_t r = 0; r < count; ++r) {
        std::int64_t off = base, rr = r;
        for (int d = nr - 1; d >= 0; --d) {
          off += (rr % red_dims[d]) * red_strides[d];
          rr /= red_dims[d];
        }
        fn(off);
      }
    });
  }
}

template <class T>
void fold_integers(const KernelArgs& a, Fold fold) {
  using U = std::make_unsigned_t<T>;
  const T* x = a.in[0].as<const T>();
  T* out = a.out.as<T>();
  for_each_slice(a.in[0], static_cast<std::uint32_t>(a.attr().i[0]),
                 [&](std::int64_t o, std::int64_t, auto slice) {
                   U sum = 0;
                   T mx = std::numeric_limits<T>::min();
                   slice([&](std::int64_t off) {
                     sum += static_cast<U>(x[off]);
                     if (x[off] > mx) mx = x[off];
                   });
                   out[o] = fold == Fold::max ? mx : static_cast<T>(sum);
                 });
}

void reduce(const KernelArgs& a, Fold fold) {
  if (a.out.dtype == DType::i32) return fold_integers<std::int32_t>(a, fold);
  if (a.out.dtype == DType::i64) return fold_integers<std::int64_t>(a, fold);
  const TensorView& x = a.in[0];
  for_each_slice(x, static_cast<std::uint32_t>(a.attr().i[0]),
                 [&](std::int64_t o, std::int64_t count, auto slice) {
                   double acc = fold == Fold::max ? -std::numeric_limits<double>::infinity() : 0.0;
                   slice([&](std::int64_t off) {
                     const double v = kernel::load(x, off);
                     if (fold != Fold::max)
                       acc += v;
                     else if (v > acc || std::isnan(v))  // NOTE: NaN wins, as in torch.amax
                       acc = v;
                   });
                   if (fold == Fold::mean) acc /= static_cast<double>(count);
                   kernel::store(a.out, o, acc);
                 });
}
}  // namespace

void OpDef<OpId::sum>::reference(const KernelArgs& a) {
  reduce(a, Fold::sum);
}
void OpDef<OpId::mean>::reference(const KernelArgs& a) {
  reduce(a, Fold::mean);
}
void OpDef<OpId::max>::reference(const KernelArgs& a) {
  reduce(a, Fold::max);
}

}  // namespace stag

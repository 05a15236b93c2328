// CUDA kernels of sum, mean and max over any set of dims: one block per output element folds
// its slice in double (NaN wins in max, as in torch.amax). Float dtypes only (the host refuses
// integer reductions at plan time).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

struct Split {
  int nk = 0, nr = 0;
  std::int64_t kept_dims[kRank] = {}, kept_strides[kRank] = {};
  std::int64_t red_dims[kRank] = {}, red_strides[kRank] = {};
  std::int64_t count = 1;
};

template <class T>
__global__ void reduce_kernel(int fold, Split s, const T* x, T* out) {
  std::int64_t base = 0, rem = blockIdx.x;
  for (int d = s.nk - 1; d >= 0; --d) {
    base += (rem % s.kept_dims[d]) * s.kept_strides[d];
    rem /= s.kept_dims[d];
  }
  double acc = fold == 2 ? -INFINITY : 0.0;
  bool nan = false;
  for (std::int64_t r = threadIdx.x; r < s.count; r += blockDim.x) {
    std::int64_t off = base, rr = r;
    for (int d = s.nr - 1; d >= 0; --d) {
      off += (rr % s.red_dims[d]) * s.red_strides[d];
      rr /= s.red_dims[d];
    }
    const double v = static_cast<double>(x[off]);
    if (fold != 2)
      acc += v;
    else if (v != v)
      nan = true;
    else if (v > acc)
      acc = v;
  }
  if (fold == 2) {
    const double any_nan = block_sum(nan ? 1.0 : 0.0);
    acc = block_max(acc);
    if (any_nan > 0) acc = NAN;
  } else {
    acc = block_sum(acc);
    if (fold == 1) acc /= static_cast<double>(s.count);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = static_cast<T>(acc);
}

}  // namespace

void reduce(const Launch& l, int fold, std::uint32_t mask, const Tensor& x, const Tensor& out) {
  Split s;
  for (int d = 0; d < x.rank; ++d) {
    if (mask & (1u << d)) {
      s.red_dims[s.nr] = x.dims[d];
      s.red_strides[s.nr++] = x.strides[d];
      s.count *= x.dims[d];
    } else {
      s.kept_dims[s.nk] = x.dims[d];
      s.kept_strides[s.nk++] = x.strides[d];
    }
  }
  const auto outputs = static_cast<unsigned>(numel(out));
  if (outputs == 0) return;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(reduce_kernel<double>, outputs, kThreads, 0, stream_of(l))
    (fold, s, static_cast<const double*>(x.data), static_cast<double*>(out.data));
  else
    STAG_LAUNCH(reduce_kernel<float>, outputs, kThreads, 0, stream_of(l))
    (fold, s, static_cast<const float*>(x.data), static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

// CUDA kernels of cross_entropy and cross_entropy_backward: one block per row of logits
// (log-sum-exp in double, as the reference), per-row results in a workspace, and the mean over
// the kept rows summed by one block in row order, so the loss is the same bits on every run. A
// label outside [0, C) that is not ignore_index records its row in Launch::bad.
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__device__ std::int64_t label_at(const void* labels, bool wide, std::int64_t r) {
  return wide ? static_cast<const std::int64_t*>(labels)[r]
              : static_cast<const std::int32_t*>(labels)[r];
}

// The row's log-sum-exp (-inf for a row of all -inf) and maximum, in double; every thread of
// the block gets them.
template <class T>
__device__ double row_lse(const T* row, std::int64_t classes, double& mx) {
  mx = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < classes; i += blockDim.x)
    mx = fmax(mx, static_cast<double>(row[i]));
  mx = block_max(mx);
  double z = 0;
  if (mx != -INFINITY)
    for (std::int64_t i = threadIdx.x; i < classes; i += blockDim.x)
      z += exp(static_cast<double>(row[i]) - mx);
  z = block_sum(z);
  return mx == -INFINITY ? -INFINITY : mx + ::log(z);
}

// Per row: loss (forward) and whether the row counts.
template <class T>
__global__ void rows_kernel(std::int64_t classes, std::int64_t ignore, double eps, const T* x,
                            const void* labels, bool wide, double* loss, double* kept, Bad bad) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t y = label_at(labels, wide, r);
  const bool ignored = y == ignore;
  if (!ignored && (y < 0 || y >= classes)) {
    if (threadIdx.x == 0) report_bad(bad, r);
    if (threadIdx.x == 0) loss[r] = kept[r] = 0;
    return;
  }
  if (ignored) {
    if (threadIdx.x == 0) loss[r] = kept[r] = 0;
    return;
  }
  const T* row = x + r * classes;
  double mx;
  const double lse = row_lse(row, classes, mx);
  double smooth = 0;
  if (eps > 0)
    for (std::int64_t i = threadIdx.x; i < classes; i += blockDim.x) {
      const double xi = static_cast<double>(row[i]);
      smooth += xi == -INFINITY ? INFINITY : lse - xi;
    }
  smooth = block_sum(smooth);
  if (threadIdx.x == 0) {
    const double xy = static_cast<double>(row[y]);
    double l = xy == -INFINITY ? INFINITY : lse - xy;
    if (eps > 0) l = (1 - eps) * l + eps * smooth / static_cast<double>(classes);
    loss[r] = l;
    kept[r] = 1;
  }
}

// out[0] = sum(loss) / sum(kept), or 0 without kept rows; one block, a fixed order.
template <class T>
__global__ void mean_kernel(std::int64_t rows, const double* loss, const double* kept, T* out) {
  double s = 0, c = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    s += loss[r];
    c += kept[r];
  }
  s = block_sum(s);
  c = block_sum(c);
  if (threadIdx.x == 0) out[0] = static_cast<T>(c == 0 ? 0.0 : s / c);
}

__global__ void count_kernel(std::int64_t rows, const double* kept, double* count) {
  double c = 0;
  for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) c += kept[r];
  c = block_sum(c);
  if (threadIdx.x == 0) count[0] = c;
}

__global__ void kept_kernel(std::int64_t rows, std::int64_t classes, std::int64_t ignore,
                            const void* labels, bool wide, double* kept, Bad bad) {
  for (std::int64_t r = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; r < rows;
       r += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t y = label_at(labels, wide, r);
    const bool ok = y != ignore && y >= 0 && y < classes;
    if (y != ignore && !ok) report_bad(bad, r);
    kept[r] = ok ? 1 : 0;
  }
}

template <class T>
__global__ void backward_kernel(std::int64_t classes, std::int64_t ignore, double eps, const T* x,
                                const void* labels, bool wide, const T* g, const double* count,
                                T* dx) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t y = label_at(labels, wide, r);
  const T* row = x + r * classes;
  T* drow = dx + r * classes;
  if (y == ignore || y < 0 || y >= classes) {
    for (std::int64_t i = threadIdx.x; i < classes; i += blockDim.x) drow[i] = T(0);
    return;
  }
  const double scale = count[0] == 0 ? 0.0 : static_cast<double>(g[0]) / count[0];
  double mx;
  const double lse = row_lse(row, classes, mx);
  for (std::int64_t i = threadIdx.x; i < classes; i += blockDim.x) {
    const double p = mx == -INFINITY ? 0.0 : exp(static_cast<double>(row[i]) - lse);
    const double target = (i == y ? 1.0 - eps : 0.0) + eps / static_cast<double>(classes);
    drow[i] = static_cast<T>((p - target) * scale);
  }
}

}  // namespace

std::size_t cross_entropy_workspace(std::int64_t rows) {
  return static_cast<std::size_t>(2 * rows + 1) * sizeof(double);
}

void cross_entropy(const Launch& l, std::int64_t ignore, double smoothing, const Tensor& logits,
                   const Tensor& labels, const Tensor& out, void* workspace) {
  const std::int64_t rows = numel(labels), classes = logits.dims[logits.rank - 1];
  auto* loss = static_cast<double*>(workspace);
  double* kept = loss + rows;
  const bool wide = labels.dtype == Dt::i64;
  cudaStream_t s = stream_of(l);
  if (rows > 0) {
    if (out.dtype == Dt::f64)
      STAG_LAUNCH(rows_kernel<double>, static_cast<unsigned>(rows), kThreads, 0, s)
      (classes, ignore, smoothing, static_cast<const double*>(logits.data), labels.data, wide, loss,
       kept, bad_of(l));
    else
      STAG_LAUNCH(rows_kernel<float>, static_cast<unsigned>(rows), kThreads, 0, s)
      (classes, ignore, smoothing, static_cast<const float*>(logits.data), labels.data, wide, loss,
       kept, bad_of(l));
  }
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(mean_kernel<double>, 1, 1024, 0, s)
    (rows, loss, kept, static_cast<double*>(out.data));
  else
    STAG_LAUNCH(mean_kernel<float>, 1, 1024, 0, s)(rows, loss, kept, static_cast<float*>(out.data));
}

void cross_entropy_backward(const Launch& l, std::int64_t ignore, double smoothing,
                            const Tensor& logits, const Tensor& labels, const Tensor& g,
                            const Tensor& out, void* workspace) {
  const std::int64_t rows = numel(labels), classes = logits.dims[logits.rank - 1];
  if (rows == 0) return;
  auto* kept = static_cast<double*>(workspace);
  double* count = kept + 2 * rows;
  const bool wide = labels.dtype == Dt::i64;
  cudaStream_t s = stream_of(l);
  STAG_LAUNCH(kept_kernel, blocks_for(rows), kThreads, 0, s)
  (rows, classes, ignore, labels.data, wide, kept, bad_of(l));
  STAG_LAUNCH(count_kernel, 1, 1024, 0, s)(rows, kept, count);
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(backward_kernel<double>, static_cast<unsigned>(rows), kThreads, 0, s)
    (classes, ignore, smoothing, static_cast<const double*>(logits.data), labels.data, wide,
     static_cast<const double*>(g.data), count, static_cast<double*>(out.data));
  else
    STAG_LAUNCH(backward_kernel<float>, static_cast<unsigned>(rows), kThreads, 0, s)
    (classes, ignore, smoothing, static_cast<const float*>(logits.data), labels.data, wide,
     static_cast<const float*>(g.data), count, static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

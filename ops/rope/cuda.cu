// CUDA kernel of rope: one thread per rotated pair, the angle in double as the reference
// (p * theta^(-2i/Dh) loses digits in f32 at large positions).
#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void rope_kernel(double theta, std::int64_t offset, double sign, std::int64_t rows,
                            std::int64_t seq, std::int64_t dh, std::int64_t rows_per_table,
                            const void* pos, Dt pos_t, const T* x, T* y) {
  const std::int64_t half = dh / 2, total = rows * seq * half;
  for (std::int64_t t = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; t < total;
       t += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t i = t % half, s = (t / half) % seq, r = t / (half * seq);
    const std::int64_t row = (r / rows_per_table) * seq + s;  // the position table row
    double p = static_cast<double>(s);
    if (pos != nullptr)
      p = pos_t == Dt::i64 ? static_cast<double>(static_cast<const std::int64_t*>(pos)[row])
                           : load(pos, pos_t, row);
    const double inv_freq = pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
    const double angle = sign * (p + static_cast<double>(offset)) * inv_freq;
    const double c = cos(angle), sn = sin(angle);
    const std::int64_t base = (r * seq + s) * dh;
    const double x1 = x[base + i], x2 = x[base + i + half];
    y[base + i] = static_cast<T>(x1 * c - x2 * sn);
    y[base + i + half] = static_cast<T>(x2 * c + x1 * sn);
  }
}

}  // namespace

void rope(const Launch& l, double theta, std::int64_t offset, bool inverse, const Tensor& x,
          const Tensor* positions, const Tensor& out) {
  const std::int64_t seq = x.dims[x.rank - 2], dh = x.dims[x.rank - 1];
  const std::int64_t rows = seq * dh == 0 ? 0 : numel(x) / (seq * dh);
  const std::int64_t tables = positions != nullptr && positions->rank == 2 ? positions->dims[0] : 1;
  const std::int64_t per = tables > 0 ? rows / tables : rows;
  const std::int64_t n = rows * seq * (dh / 2);
  if (n == 0) return;
  const void* pos = positions ? positions->data : nullptr;
  const Dt pt = positions ? positions->dtype : Dt::f32;
  const double sign = inverse ? -1.0 : 1.0;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(rope_kernel<double>, blocks_for(n), kThreads, 0, stream_of(l))
    (theta, offset, sign, rows, seq, dh, per > 0 ? per : 1, pos, pt,
     static_cast<const double*>(x.data), static_cast<double*>(out.data));
  else
    STAG_LAUNCH(rope_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))
    (theta, offset, sign, rows, seq, dh, per > 0 ? per : 1, pos, pt,
     static_cast<const float*>(x.data), static_cast<float*>(out.data));
}

}  // namespace stag::STAG_CUDA_NAMESPACE

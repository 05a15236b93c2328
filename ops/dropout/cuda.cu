// CUDA kernel of dropout: element i is kept when uniform(seed, step, salt, offset + i) >= p,
// with the counter-based generator of ops/random.hpp, so the GPU draws the CPU's masks. Seed and
// step are read on the device (Launch::rng), so that a replayed CUDA Graph draws each step's.
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/random.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__global__ void dropout_kernel(double p, const std::uint64_t* rng, std::uint64_t salt,
                               std::uint64_t offset, const T* x, T* y, std::int64_t n) {
  const double scale = 1.0 / (1.0 - p);
  const std::uint64_t seed = rng[0], step = rng[1];
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const double u = random::uniform(seed, step, salt, offset + static_cast<std::uint64_t>(i));
    y[i] = u >= p ? static_cast<T>(static_cast<double>(x[i]) * scale) : T(0);
  }
}

}  // namespace

void dropout(const Launch& l, double p, std::uint64_t salt, std::uint64_t index_offset,
             const Tensor& x, const Tensor& out) {
  const std::int64_t n = numel(out);
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(dropout_kernel<double>, blocks_for(n), kThreads, 0, stream_of(l))
  (p, l.rng, salt, index_offset, static_cast<const double*>(x.data), static_cast<double*>(out.data),
   n);
  else STAG_LAUNCH(dropout_kernel<float>, blocks_for(n), kThreads, 0, stream_of(l))(
      p, l.rng, salt, index_offset, static_cast<const float*>(x.data),
      static_cast<float*>(out.data), n);
}

}  // namespace stag::STAG_CUDA_NAMESPACE

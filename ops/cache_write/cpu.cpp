// CPU kernel of cache_write: the reference's position check, then the row blocks copied in
// parallel over the leading dims (batch x heads), straight into the cache's external buffer.
#include <cstring>

#include <stag/ops/cache_write/position.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {
namespace {

class CacheWriteKernel final : public OwnKernel {
 public:
  explicit CacheWriteKernel(const CpuNode& n)
      : OwnKernel(n, &OpDef<OpId::cache_write>::reference, "own cache_write (row copy)") {}

  void run() override {
    const TensorView& cache = in_[0];
    const TensorView& rows = in_[1];
    const std::int64_t p = kernel::cache_write_position(g_, node_, cache, rows, in_[2]);
    out_.as<float>()[0] = 0.f;
    const std::int64_t len = cache.dims[cache.rank - 2], t = rows.dims[rows.rank - 2];
    const std::int64_t row_bytes =
        cache.dims[cache.rank - 1] * static_cast<std::int64_t>(dtype_size(cache.dtype));
    std::int64_t outer = 1;
    for (int d = 0; d < cache.rank - 2; ++d) outer *= cache.dims[d];
    if (t == 0 || row_bytes == 0) return;
    auto* dst = static_cast<char*>(cache.data);
    const auto* src = static_cast<const char*>(rows.data);
    const std::size_t block = static_cast<std::size_t>(t * row_bytes);
    // Small writes (one token) are cheaper on one thread than waking the team.
#pragma omp parallel for schedule(static) if (outer * t * row_bytes > (1 << 16))
    for (std::int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + (o * len + p) * row_bytes, src + o * t * row_bytes, block);
  }
};

}  // namespace

std::unique_ptr<CpuKernel> OpDef<OpId::cache_write>::cpu(const CpuNode& n) {
  if (!n.in[0].contiguous() || !n.in[1].contiguous() || n.out.dtype != DType::f32) return nullptr;
  return std::make_unique<CacheWriteKernel>(n);
}

}  // namespace stag

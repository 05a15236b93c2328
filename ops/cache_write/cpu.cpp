// CPU kernel of cache_write: the reference's position check, then the row blocks copied in
// parallel over the leading dims (batch x heads), straight into the cache's external buffer,
// which is also the node's result (the planner aliases them: OpDef::result_is).
#include <cstring>

#include <stag/ops/cache_write/position.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {
namespace {

class CacheWriteKernel final : public OwnKernel {
 public:
  explicit CacheWriteKernel(const KernelNode& n)
      : OwnKernel(n, &OpDef<OpId::cache_write>::reference, "own cache_write (row copy)") {}

  void run() override {
    const TensorView& cache = in_[0];
    const TensorView& rows = in_[1];
    const std::vector<std::int64_t> at =
        kernel::cache_write_positions(g_, node_, cache, rows, in_[2]);
    const kernel::CacheWriteLayout l = kernel::cache_write_layout(cache, rows);
    if (l.t > 0 && l.row_bytes > 0) {
      auto* dst = static_cast<char*>(cache.data);
      const auto* src = static_cast<const char*>(rows.data);
      const std::size_t block = static_cast<std::size_t>(l.t * l.row_bytes);
      // Small writes (one token) are cheaper on one thread than waking the team.
#pragma omp parallel for schedule(static) if (l.outer * l.t * l.row_bytes > (1 << 16))
      for (std::int64_t o = 0; o < l.outer; ++o) {
        const std::int64_t p = at[static_cast<std::size_t>(o / l.inner)];
        if (p >= 0)
          std::memcpy(dst + (o * l.len + p) * l.row_bytes, src + o * l.t * l.row_bytes, block);
      }
    }
    if (out_.data != cache.data)
      std::memcpy(out_.data, cache.data,
                  static_cast<std::size_t>(cache.numel()) * dtype_size(cache.dtype));
  }
};

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::cache_write>::cpu(const KernelNode& n) {
  if (!n.in[0].contiguous() || !n.in[1].contiguous() || !n.out.contiguous()) return nullptr;
  return std::make_unique<CacheWriteKernel>(n);
}

}  // namespace stag

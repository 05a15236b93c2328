// CPU kernel of cumsum (f32, contiguous input): the input seen as [outer, len, inner]. With
// inner > 1 each step along the axis adds a whole row of `inner` contiguous values to the
// previous row (vectorised); with inner == 1 each line is a sequential loop. Work is split over
// outer and over blocks of inner, never along the axis, so every output is the same sequential
// sum as the reference's (bit for bit, whatever the thread count).
#include <algorithm>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/cumsum/cumsum.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

// y[r] = y[r -/+ 1] + x[r] for the rows of one [len, inner] slab, columns [c0, c1).
STAG_VECTORIZED void scan_rows(const float* __restrict x, float* __restrict y, std::int64_t len,
                               std::int64_t inner, std::int64_t c0, std::int64_t c1, bool reverse) {
  const std::int64_t first = reverse ? len - 1 : 0, step = reverse ? -inner : inner;
  std::copy(x + first * inner + c0, x + first * inner + c1, y + first * inner + c0);
  for (std::int64_t k = 1; k < len; ++k) {
    const std::int64_t r = reverse ? len - 1 - k : k;
    const float* xr = x + r * inner;
    const float* prev = y + r * inner - step;
    float* yr = y + r * inner;
#pragma omp simd
    for (std::int64_t c = c0; c < c1; ++c) yr[c] = prev[c] + xr[c];
  }
}

class CumsumKernel final : public Kernel {
 public:
  CumsumKernel(const KernelNode& n, std::int64_t outer, std::int64_t len, std::int64_t inner)
      : x_(n.in[0].as<const float>()),
        y_(n.out.as<float>()),
        outer_(outer),
        len_(len),
        inner_(inner),
        reverse_(n.attr().i[1] != 0) {
    // Blocks of at least 64 columns, enough of them to share among the threads.
    const std::int64_t want =
        std::max<std::int64_t>(1, 4 * n.ctx.threads / std::max<std::int64_t>(1, outer));
    blocks_ = std::clamp<std::int64_t>(std::min(want, inner / 64), 1, inner);
  }
  void run() override {
    const std::int64_t per = (inner_ + blocks_ - 1) / blocks_;
    const std::int64_t tasks = outer_ * blocks_;
#pragma omp parallel for schedule(static) if (outer_ * len_ * inner_ > (1 << 14))
    for (std::int64_t t = 0; t < tasks; ++t) {
      const std::int64_t o = t / blocks_, b = t % blocks_;
      const std::int64_t c0 = std::min(inner_, b * per), c1 = std::min(inner_, c0 + per);
      if (c0 >= c1) continue;
      scan_rows(x_ + o * len_ * inner_, y_ + o * len_ * inner_, len_, inner_, c0, c1, reverse_);
    }
  }
  std::string describe() const override {
    return "own cumsum";
  }

 private:
  const float* x_;
  float* y_;
  std::int64_t outer_, len_, inner_;
  bool reverse_;
  std::int64_t blocks_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::cumsum>::cpu(const KernelNode& n) {
  const TensorView& x = n.in[0];
  if (n.out.dtype != DType::f32 || !x.contiguous()) return nullptr;
  const int axis = static_cast<int>(n.attr().i[0]);
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dims[d];
  for (int d = axis + 1; d < x.rank; ++d) inner *= x.dims[d];
  const std::int64_t len = x.dims[axis];
  if (outer * len * inner == 0) return nullptr;
  return std::make_unique<CumsumKernel>(n, outer, len, inner);
}

}  // namespace stag

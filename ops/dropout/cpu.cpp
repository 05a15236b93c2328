// CPU kernel of dropout: the same counter-based mask as the reference (bits of the element's
// index mixed with the node's stream, compared with an integer threshold), vectorised and
// parallel over elements; the identity copy in eval mode.
#include <algorithm>
#include <cstring>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/dropout/dropout.hpp>
#include <stag/ops/random.hpp>

namespace stag {
namespace {

void dropout_block(const float* __restrict x, float* __restrict y, std::int64_t begin,
                   std::int64_t end, std::uint64_t stream, std::uint64_t offset,
                   std::uint64_t threshold, float scale) {
#pragma omp simd
  for (std::int64_t i = begin; i < end; ++i) {
    const std::uint64_t b = random::mix(stream ^ (offset + static_cast<std::uint64_t>(i))) >> 11;
    const float xs = x[i] * scale;  // loaded unconditionally: a conditional load kept it scalar
    y[i] = b >= threshold ? xs : 0.f;
  }
}

class DropoutKernel final : public OwnKernel {
 public:
  explicit DropoutKernel(const KernelNode& n)
      : OwnKernel(n, &OpDef<OpId::dropout>::reference, "own dropout") {}
  void run() override {
    const double p = attr().f[0];
    const std::int64_t n = out_.numel();
    if (!(p >= 0.0 && p < 1.0)) run_reference();  // reports the bad p
    const float* x = in_[0].as<const float>();
    float* y = out_.as<float>();
    if (!state_.training || p == 0.0) {
      if (x != y) std::memcpy(y, x, static_cast<std::size_t>(n) * sizeof(float));
      return;
    }
    const std::uint64_t stream =
        random::stream(state_.seed, state_.step, static_cast<std::uint64_t>(attr().i[0]));
    const std::uint64_t threshold = random::keep_threshold(p);
    const auto scale = static_cast<float>(1.0 / (1.0 - p));
    const std::uint64_t offset = global_index_offset(state_, n);
    constexpr std::int64_t block = 1 << 14;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < n; b += block)
      dropout_block(x, y, b, std::min(n, b + block), stream, offset, threshold, scale);
  }
};

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::dropout>::cpu(const KernelNode& n) {
  if (n.out.dtype != DType::f32 || !n.in[0].contiguous()) return nullptr;
  return std::make_unique<DropoutKernel>(n);
}

}  // namespace stag

// CPU kernel of expand: an own broadcasting copy, parallel over the output's outer rows with a
// contiguous (or broadcast) inner run.
#include <cstring>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/expand/expand.hpp>

namespace stag {
namespace {

class ExpandKernel final : public Kernel {
 public:
  explicit ExpandKernel(const KernelNode& n) : in_(n.in[0]), out_(n.out) {
    kernel::broadcast_strides(in_, out_.rank, out_.dims, stride_);
    inner_ = out_.dims[out_.rank - 1];
    rows_ = inner_ ? out_.numel() / inner_ : 0;
  }
  void run() override {
    const std::size_t es = dtype_size(out_.dtype);
    const auto* src = static_cast<const unsigned char*>(in_.data);
    auto* dst = static_cast<unsigned char*>(out_.data);
    const std::int64_t inner_stride = stride_[out_.rank - 1];
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows_; ++r) {
      std::int64_t off = 0, rem = r;
      for (int d = out_.rank - 2; d >= 0; --d) {
        off += (rem % out_.dims[d]) * stride_[d];
        rem /= out_.dims[d];
      }
      unsigned char* o = dst + static_cast<std::size_t>(r * inner_) * es;
      if (inner_stride == 1) {
        std::memcpy(o, src + static_cast<std::size_t>(off) * es,
                    static_cast<std::size_t>(inner_) * es);
      } else {
        for (std::int64_t k = 0; k < inner_; ++k)
          std::memcpy(o + static_cast<std::size_t>(k) * es,
                      src + static_cast<std::size_t>(off + k * inner_stride) * es, es);
      }
    }
  }
  std::string describe() const override {
    return "own expand";
  }

 private:
  TensorView in_, out_;
  std::int64_t stride_[kMaxRank] = {};
  std::int64_t inner_ = 0, rows_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::expand>::cpu(const KernelNode& n) {
  if (n.out.rank == 0 || !n.in[0].contiguous()) return nullptr;
  return std::make_unique<ExpandKernel>(n);
}

}  // namespace stag

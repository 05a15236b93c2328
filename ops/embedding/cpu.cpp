// CPU kernels of embedding (parallel row copies, f32 or bf16) and embedding_backward (scatter-add,
// parallel over column blocks so each element accumulates its positions in position order: the
// result is deterministic). Ids are checked first; a bad id is reported by the reference kernel,
// whose message names the node, the position and the valid range.
#include <algorithm>
#include <cstring>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/embedding/embedding.hpp>

namespace stag {
namespace {

template <class Id>
bool ids_ok(const Id* ids, std::int64_t n, std::int64_t rows) {
  bool ok = true;
  for (std::int64_t i = 0; i < n; ++i) ok &= ids[i] >= 0 && ids[i] < rows;
  return ok;
}

class EmbeddingKernel final : public OwnKernel {
 public:
  EmbeddingKernel(const KernelNode& n, bool backward)
      : OwnKernel(n,
                  backward ? &OpDef<OpId::embedding_backward>::reference
                           : &OpDef<OpId::embedding>::reference,
                  backward ? "own embedding backward (scatter-add)" : "own embedding (gather)"),
        backward_(backward) {}

  void run() override {
    const TensorView& ids = in_[0];
    const std::int64_t rows = backward_ ? out_.dims[0] : in_[1].dims[0];
    const std::int64_t n = ids.numel();
    const bool ok = ids.dtype == DType::i32 ? ids_ok(ids.as<const std::int32_t>(), n, rows)
                                            : ids_ok(ids.as<const std::int64_t>(), n, rows);
    if (!ok) run_reference();  // throws with the position of the first bad id
    if (ids.dtype == DType::i32)
      body(ids.as<const std::int32_t>(), n);
    else
      body(ids.as<const std::int64_t>(), n);
  }

 private:
  template <class Id>
  void body(const Id* ids, std::int64_t n) {
    if (!backward_) {
      // Rows of f32 or bf16, copied bit for bit.
      const std::size_t row = static_cast<std::size_t>(in_[1].dims[1]) * dtype_size(out_.dtype);
      const char* table = in_[1].as<const char>();
      char* y = out_.as<char>();
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(y + static_cast<std::size_t>(i) * row,
                    table + static_cast<std::size_t>(ids[i]) * row, row);
      return;
    }
    const std::int64_t d = out_.dims[1];
    const float* g = in_[1].as<const float>();
    float* out = out_.as<float>();
    const std::int64_t block = 16;
    const std::int64_t blocks = (d + block - 1) / block;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t k0 = b * block, k1 = std::min(d, k0 + block);
      for (std::int64_t r = 0; r < out_.dims[0]; ++r)
        std::fill(out + r * d + k0, out + r * d + k1, 0.f);
      for (std::int64_t i = 0; i < n; ++i) {
        float* dst = out + static_cast<std::int64_t>(ids[i]) * d;
        const float* src = g + i * d;
        for (std::int64_t k = k0; k < k1; ++k) dst[k] += src[k];
      }
    }
  }
  bool backward_;
};

bool supported(const KernelNode& n, bool backward) {
  const bool bf16 = !backward && n.in[1].dtype == DType::bf16;  // a bf16 table: forward only
  return (n.in[0].dtype == DType::i32 || n.in[0].dtype == DType::i64) && n.in[0].contiguous() &&
         (n.in[1].dtype == DType::f32 || bf16) && n.in[1].contiguous() &&
         n.out.dtype == n.in[1].dtype;
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::embedding>::cpu(const KernelNode& n) {
  return supported(n, false) ? std::make_unique<EmbeddingKernel>(n, false) : nullptr;
}
std::unique_ptr<Kernel> OpDef<OpId::embedding_backward>::cpu(const KernelNode& n) {
  return supported(n, true) ? std::make_unique<EmbeddingKernel>(n, true) : nullptr;
}

}  // namespace stag

// CPU kernels of softmax and log_softmax: oneDNN softmax_v2 forward (accurate or log) and
// backward (from the forward output y), with the forward descriptor as the backward's hint.
// The masked form runs an own kernel, parallel over rows: masked positions get 0 and a fully
// masked row gives zeros (oneDNN has no masked softmax).
#include <cmath>
#include <limits>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/softmax/softmax.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

dnnl::softmax_v2_forward::primitive_desc forward_pd(const dnnl::memory::desc& md, int axis,
                                                    bool log, const dnnl::engine& eng) {
  return dnnl::softmax_v2_forward::primitive_desc(
      dnnl::softmax_v2_forward::desc(
          dnnl::prop_kind::forward_training,
          log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md, axis),
      eng);
}

std::unique_ptr<Kernel> forward(const KernelNode& n, bool log) {
  if (n.out.dtype != DType::f32 || !n.in[0].contiguous()) return nullptr;
  const int axis = static_cast<int>(n.attr().i[0]);
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  const auto pd = forward_pd(md, axis, log, eng);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::softmax_v2_forward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DST, memory_of(md, n.out, eng)}},
      std::string("onednn ") + (log ? "log_softmax" : "softmax") + " (" + impl_name(pd) + ")");
}

std::unique_ptr<Kernel> backward(const KernelNode& n, bool log) {
  if (n.out.dtype != DType::f32 || !n.in[0].contiguous() || !n.in[1].contiguous()) return nullptr;
  const int axis = static_cast<int>(n.attr().i[0]);
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  const auto hint = forward_pd(md, axis, log, eng);
  dnnl::softmax_v2_backward::primitive_desc pd(
      dnnl::softmax_v2_backward::desc(
          log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md, md, axis),
      eng, hint);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::softmax_v2_backward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_DST, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DIFF_DST, memory_of(md, n.in[1], eng)},
                                            {DNNL_ARG_DIFF_SRC, memory_of(md, n.out, eng)}},
      std::string("onednn ") + (log ? "log_softmax" : "softmax") + " backward (" + impl_name(pd) +
          ")");
}

// One row of a masked softmax with a contiguous mask row (m[k]: position k is kept). The
// reductions use `omp simd` so that they vectorise without -ffast-math.
STAG_VECTORIZED void masked_softmax_row(const float* __restrict x, const bool* __restrict mask,
                                        float* __restrict y, std::int64_t len) {
  const auto* m = reinterpret_cast<const std::uint8_t*>(mask);
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const float mx = vec::max_reduce(x, m, len);
  if (mx == ninf) {  // NOTE: fully masked row: zeros, not NaN
    for (std::int64_t k = 0; k < len; ++k) y[k] = 0.f;
    return;
  }
  float z = 0.f;
#pragma omp simd reduction(+ : z)
  for (std::int64_t k = 0; k < len; ++k) {
    const float e0 = vec::exp_approx(x[k] - mx);
    const float e = m[k] ? e0 : 0.f;
    y[k] = e;
    z += e;
  }
  const float inv = 1.f / z;
#pragma omp simd
  for (std::int64_t k = 0; k < len; ++k) y[k] *= inv;
}

// Masked softmax along the last axis (the attention case): rows of x, mask read through
// broadcast strides. Other axes fall back to the reference kernel.
class MaskedSoftmax final : public Kernel {
 public:
  explicit MaskedSoftmax(const KernelNode& n) : x_(n.in[0]), m_(n.in[1]), y_(n.out) {
    kernel::broadcast_strides(m_, y_.rank, y_.dims, mstride_);
    len_ = y_.dims[y_.rank - 1];
    rows_ = len_ ? y_.numel() / len_ : 0;
    ones_.assign(static_cast<std::size_t>(len_), 1);
    zeros_.assign(static_cast<std::size_t>(len_), 0);
  }
  void run() override {
    const float* x = x_.as<const float>();
    const bool* m = m_.as<const bool>();
    float* y = y_.as<float>();
#pragma omp parallel for schedule(static)
    for (std::int64_t r = 0; r < rows_; ++r) {
      std::int64_t moff = 0, rem = r;  // mask offset of the row's first element
      for (int d = y_.rank - 2; d >= 0; --d) {
        moff += (rem % y_.dims[d]) * mstride_[d];
        rem /= y_.dims[d];
      }
      const std::int64_t ms = mstride_[y_.rank - 1];
      if (ms == 1) {
        masked_softmax_row(x + r * len_, m + moff, y + r * len_, len_);
      } else {  // the mask is constant along the row: all kept or all masked
        const bool* row_mask =
            reinterpret_cast<const bool*>(m[moff] ? ones_.data() : zeros_.data());
        masked_softmax_row(x + r * len_, row_mask, y + r * len_, len_);
      }
    }
  }
  std::string describe() const override {
    return "own masked softmax";
  }

 private:
  TensorView x_, m_, y_;
  std::int64_t mstride_[kMaxRank] = {};
  std::int64_t len_ = 0, rows_ = 0;
  std::vector<char> ones_, zeros_;
};

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::softmax>::cpu(const KernelNode& n) {
  if (n.in.size() == 1) return forward(n, false);
  const int axis = static_cast<int>(n.attr().i[0]);
  if (n.out.dtype != DType::f32 || axis != n.out.rank - 1 || !n.in[0].contiguous()) return nullptr;
  return std::make_unique<MaskedSoftmax>(n);
}
std::unique_ptr<Kernel> OpDef<OpId::log_softmax>::cpu(const KernelNode& n) {
  return forward(n, true);
}
std::unique_ptr<Kernel> OpDef<OpId::softmax_backward>::cpu(const KernelNode& n) {
  return backward(n, false);
}
std::unique_ptr<Kernel> OpDef<OpId::log_softmax_backward>::cpu(const KernelNode& n) {
  return backward(n, true);
}

}  // namespace stag

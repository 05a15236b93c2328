// CPU kernels of add, sub, mul, div, minimum, maximum (f32): oneDNN binary primitives where
// oneDNN has an optimised implementation, otherwise an own broadcasting loop. oneDNN broadcasts
// only its second source (a commutative op with a broadcast first operand swaps them) and
// falls back to its generic `ref:any` for broadcasts along inner axes; the own loop covers
// those, both operands broadcast (an outer product [.., D, 1] * [.., 1, E]) and sub/div with a
// broadcast first operand.
#include <cmath>

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/binary/math.hpp>
#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/vec.hpp>

namespace stag {
namespace {

// out = f(a, b) with broadcasting: the axes where a, b and out all run on contiguously are
// merged, the innermost one is a vectorised loop (each operand contiguous along it or
// constant), the outer index is split across threads. Same formulas as reference.cpp.
class BroadcastBinary final : public Kernel {
 public:
  BroadcastBinary(const KernelNode& n, OpId op) : op_(op) {
    a_ = n.in[0].as<const float>();
    b_ = n.in[1].as<const float>();
    out_ = n.out.as<float>();
    const int r = n.out.rank;
    std::int64_t sa[kMaxRank] = {}, sb[kMaxRank] = {};
    kernel::broadcast_strides(n.in[0], r, n.out.dims, sa);
    kernel::broadcast_strides(n.in[1], r, n.out.dims, sb);
    // From the innermost axis out: axis k merges into the axis inside it when a and b step
    // across k as across that axis continued (which holds for stride 0 on both too).
    std::int64_t d[kMaxRank], ca[kMaxRank], cb[kMaxRank];
    int m = 0;
    for (int k = r - 1; k >= 0; --k) {
      if (n.out.dims[k] == 1) continue;
      if (m > 0 && sa[k] == ca[m - 1] * d[m - 1] && sb[k] == cb[m - 1] * d[m - 1]) {
        d[m - 1] *= n.out.dims[k];
        continue;
      }
      d[m] = n.out.dims[k], ca[m] = sa[k], cb[m] = sb[k];
      ++m;
    }
    for (int k = 0; k < m; ++k)  // outermost first
      dims_[k] = d[m - 1 - k], sa_[k] = ca[m - 1 - k], sb_[k] = cb[m - 1 - k];
    rank_ = m;
    if (rank_ == 0) dims_[0] = 1, rank_ = 1;
    total_ = n.out.numel();
  }
  void run() override {
    switch (op_) {
      case OpId::add:
        return apply([](float x, float y) { return x + y; });
      case OpId::sub:
        return apply([](float x, float y) { return x - y; });
      case OpId::mul:
        return apply([](float x, float y) { return x * y; });
      case OpId::div:
        return apply([](float x, float y) { return x / y; });
      case OpId::minimum:
        return apply([](float x, float y) { return binary_math::minimum(x, y); });
      default:
        return apply([](float x, float y) { return binary_math::maximum(x, y); });
    }
  }
  std::string describe() const override { return "own broadcast binary"; }

 private:
  template <class F>
  void apply(F f) const {
    const std::int64_t inner = dims_[rank_ - 1], outer = total_ / inner;
    const std::int64_t ia = sa_[rank_ - 1], ib = sb_[rank_ - 1];
#pragma omp parallel for schedule(static) if (total_ > (1 << 15))
    for (std::int64_t o = 0; o < outer; ++o) {
      std::int64_t oa = 0, ob = 0, rest = o;
      for (int k = rank_ - 2; k >= 0; --k) {
        const std::int64_t i = rest % dims_[k];
        rest /= dims_[k];
        oa += i * sa_[k];
        ob += i * sb_[k];
      }
      row(f, a_ + oa, ia, b_ + ob, ib, out_ + o * inner, inner);
    }
  }
  // NOTE: no __restrict: the output may be an input (in place), element for element, which
  // `omp simd` allows.
  template <class F>
  static STAG_VECTORIZED void row(F f, const float* a, std::int64_t ia, const float* b,
                                  std::int64_t ib, float* y, std::int64_t n) {
    if (ia == 1 && ib == 1) {
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) y[j] = f(a[j], b[j]);
    } else if (ia == 1 && ib == 0) {
      const float bv = *b;
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) y[j] = f(a[j], bv);
    } else if (ia == 0 && ib == 1) {
      const float av = *a;
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) y[j] = f(av, b[j]);
    } else {
      for (std::int64_t j = 0; j < n; ++j) y[j] = f(a[j * ia], b[j * ib]);
    }
  }
  OpId op_;
  const float* a_ = nullptr;
  const float* b_ = nullptr;
  float* out_ = nullptr;
  int rank_ = 0;
  std::int64_t dims_[kMaxRank] = {}, sa_[kMaxRank] = {}, sb_[kMaxRank] = {};
  std::int64_t total_ = 0;
};

bool full_shape(const TensorView& v, const TensorView& out) {
  if (v.rank != out.rank) return false;
  for (int i = 0; i < v.rank; ++i)
    if (v.dims[i] != out.dims[i]) return false;
  return true;
}

// The own loop, when the output is contiguous and does not overlap an input it reads at a
// different position (in place is fine only over a full-shape contiguous input).
std::unique_ptr<Kernel> own_binary(const KernelNode& n, OpId op) {
  if (!n.out.contiguous()) return nullptr;
  for (const TensorView& v : n.in)
    if (v.data == n.out.data && !(full_shape(v, n.out) && v.contiguous())) return nullptr;
  return std::make_unique<BroadcastBinary>(n, op);
}

std::unique_ptr<Kernel> binary(const KernelNode& n, dnnl::algorithm alg, bool commutative) {
  if (n.out.dtype != DType::f32) return nullptr;
  const OpId op = op_id(n.n().op);
  TensorView a = n.in[0], b = n.in[1];
  // In place over input 1 (planned only for commutative ops) or a broadcast input 0: swap.
  const bool swap = commutative && (!full_shape(a, n.out) || b.data == n.out.data);
  if (swap) std::swap(a, b);
  if (!full_shape(a, n.out)) return own_binary(n, op);
  const dnnl::engine& eng = n.ctx.eng;
  const int r = std::max(1, n.out.rank);
  const TensorView bp = padded(b, r);
  try {
    dnnl::binary::primitive_desc pd(
        dnnl::binary::desc(alg, memory_desc(a), memory_desc(bp), memory_desc(n.out)), eng);
    // oneDNN's generic implementation is an element-by-element loop: the own one is faster.
    if (impl_name(pd).rfind("ref", 0) == 0) {
      if (auto k = own_binary(n, op)) return k;
    }
    return std::make_unique<OnednnKernel>(
        eng, make_primitive<dnnl::binary>(pd),
        std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC_0, memory_of(pd.src0_desc(), a, eng)},
                                              {DNNL_ARG_SRC_1, memory_of(pd.src1_desc(), bp, eng)},
                                              {DNNL_ARG_DST, memory_of(pd.dst_desc(), n.out, eng)}},
        "onednn binary (" + impl_name(pd) + ")");
  } catch (const dnnl::error&) {
    return own_binary(n, op);
  }
}

}  // namespace

std::unique_ptr<Kernel> OpDef<OpId::add>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_add, true);
}
std::unique_ptr<Kernel> OpDef<OpId::sub>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_sub, false);
}
std::unique_ptr<Kernel> OpDef<OpId::mul>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_mul, true);
}
std::unique_ptr<Kernel> OpDef<OpId::div>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_div, false);
}
std::unique_ptr<Kernel> OpDef<OpId::minimum>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_min, true);
}
std::unique_ptr<Kernel> OpDef<OpId::maximum>::cpu(const KernelNode& n) {
  return binary(n, dnnl::algorithm::binary_max, true);
}

}  // namespace stag

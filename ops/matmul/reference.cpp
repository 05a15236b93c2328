// Reference kernel of matmul: a triple loop per batch element, accumulating in double.
// (bf16 operands: the same loop, read and written through kernel::load / store.)
#include <utility>

#include <stag/ops/kernel.hpp>
#include <stag/ops/matmul/matmul.hpp>

namespace stag {

void OpDef<OpId::matmul>::reference(const KernelArgs& args) {
  const TensorView& a = args.in[0];
  const TensorView& b = args.in[1];
  const TensorView& c = args.out;
  const bool ta = args.attr().i[0] != 0, tb = args.attr().i[1] != 0;
  const std::int64_t M = c.dims[c.rank - 2], N = c.dims[c.rank - 1];
  const std::int64_t K = a.dims[a.rank - (ta ? 2 : 1)];
  // Batch views: a and b read as if broadcast to c's batch dims.
  TensorView cb = c, ab = a, bb = b;
  cb.rank = c.rank - 2;
  ab.rank = a.rank - 2;
  bb.rank = b.rank - 2;
  std::int64_t sa[kMaxRank] = {}, sb[kMaxRank] = {};
  kernel::broadcast_strides(ab, cb.rank, cb.dims, sa);
  kernel::broadcast_strides(bb, cb.rank, cb.dims, sb);
  const std::int64_t batches = cb.numel();
  const std::int64_t a_rs = ta ? 1 : K, a_ks = ta ? M : 1;  // a[m, k] in its last two dims
  const std::int64_t b_ks = tb ? 1 : N, b_cs = tb ? K : 1;  // b[k, n]
  // The element offsets of batch element bi's matrices in a and b.
  const auto batch_offsets = [&](std::int64_t bi) {
    std::int64_t oa = 0, ob = 0, rem = bi;
    for (int d = cb.rank - 1; d >= 0; --d) {
      const std::int64_t i = rem % cb.dims[d];
      rem /= cb.dims[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
    return std::pair{oa, ob};
  };
  if (a.dtype == DType::bf16) {  // bf16 operands, f32 or bf16 product: rounded once at the end
    for (std::int64_t bi = 0; bi < batches; ++bi) {
      const auto [oa, ob] = batch_offsets(bi);
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (std::int64_t k = 0; k < K; ++k)
            acc += kernel::load(a, oa + m * a_rs + k * a_ks) *
                   kernel::load(b, ob + k * b_ks + n * b_cs);
          kernel::store(c, bi * M * N + m * N + n, acc);
        }
    }
    return;
  }
  kernel::with_float(c.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* A = a.as<const T>();
    const T* B = b.as<const T>();
    T* C = c.as<T>();
    for (std::int64_t bi = 0; bi < batches; ++bi) {
      const auto [oa, ob] = batch_offsets(bi);
      const T* Ab = A + oa;  // contiguous matrices: batch strides are in elements
      const T* Bb = B + ob;
      T* Cb = C + bi * M * N;
      for (std::int64_t m = 0; m < M; ++m)
        for (std::int64_t n = 0; n < N; ++n) {
          double acc = 0;
          for (std::int64_t k = 0; k < K; ++k)
            acc += static_cast<double>(Ab[m * a_rs + k * a_ks]) *
                   static_cast<double>(Bb[k * b_ks + n * b_cs]);
          Cb[m * N + n] = static_cast<T>(acc);
        }
    }
  });
}

}  // namespace stag

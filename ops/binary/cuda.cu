// CUDA kernels of add, sub, mul, div, minimum, maximum: one thread per output element, operands
// read broadcast. Integers wrap (computed unsigned); an integer zero divisor records the output
// position in Launch::bad and the host reports it as the reference kernel does.
#include <type_traits>

#include <stag/ops/binary/math.hpp>
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/op_list.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

template <class T>
__device__ T apply(OpId op, T x, T y, std::int64_t i, Bad bad) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case OpId::add:
        return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
      case OpId::sub:
        return static_cast<T>(static_cast<U>(x) - static_cast<U>(y));
      case OpId::mul:
        return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
      case OpId::div:
        if (y == 0) {
          report_bad(bad, i);
          return 0;
        }
        return y == T(-1) ? static_cast<T>(U(0) - static_cast<U>(x)) : x / y;
      default:
        break;
    }
  } else {
    switch (op) {
      case OpId::add:
        return x + y;
      case OpId::sub:
        return x - y;
      case OpId::mul:
        return x * y;
      case OpId::div:
        return x / y;
      default:
        break;
    }
  }
  return op == OpId::minimum ? binary_math::minimum(x, y) : binary_math::maximum(x, y);
}

template <class T>
__global__ void binary_kernel(OpId op, Index<2> ix, const T* a, const T* b, T* out, std::int64_t n,
                              Bad bad) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    std::int64_t off[2];
    ix.offsets(i, off);
    out[i] = apply<T>(op, a[off[0]], b[off[1]], i, bad);
  }
}

template <class T>
void run(const Launch& l, int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  const Tensor* ins[2] = {&a, &b};
  const std::int64_t n = numel(out);
  STAG_LAUNCH(binary_kernel<T>, blocks_for(n), kThreads, 0, stream_of(l))
  (static_cast<OpId>(op), index_for(out, ins), static_cast<const T*>(a.data),
   static_cast<const T*>(b.data), static_cast<T*>(out.data), n, bad_of(l));
}

}  // namespace

void binary(const Launch& l, int op, const Tensor& a, const Tensor& b, const Tensor& out) {
  switch (out.dtype) {
    case Dt::f64:
      return run<double>(l, op, a, b, out);
    case Dt::i32:
      return run<std::int32_t>(l, op, a, b, out);
    case Dt::i64:
      return run<std::int64_t>(l, op, a, b, out);
    default:
      return run<float>(l, op, a, b, out);
  }
}

}  // namespace stag::STAG_CUDA_NAMESPACE

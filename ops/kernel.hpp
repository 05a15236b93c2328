// Run-time side of an op: the arguments every kernel receives (views of its inputs and output,
// the graph node, the run state) and small helpers for the reference kernels (plain loops).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include <stag/graph/graph_view.hpp>

namespace stag {

// Errors a user can cause at run time (bad inputs, out-of-range ids, bad checkpoints): the
// message names the input or node, the dim, and what was expected against what was given.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A non-owning view of a tensor: dims and strides in elements.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= dims[i];
    return n;
  }
  bool contiguous() const {
    std::int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      if (dims[i] != 1 && strides[i] != s) return false;
      s *= dims[i];
    }
    return true;
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(data);
  }
  // Strides of a contiguous row-major tensor with these dims.
  void set_contiguous() {
    std::int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      strides[i] = s;
      s *= dims[i];
    }
  }
};

// Per-run state shared by all kernels: the seed and step that drive dropout's counter-based
// RNG, and the mode (dropout is the identity in eval mode).
struct RunState {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  bool training = false;
  // Data parallelism: this step's `rows` batch rows are rows row_offset... of the global batch,
  // so that dropout draws, for each element, the mask bit of that element's global index (the
  // same masks on any number of ranks). 0: the batch is the whole one.
  std::int64_t row_offset = 0;
  std::int64_t rows = 0;
};

// The global flat index of element 0 of a batch-major tensor of `numel` elements (dim 0, or
// the leading dims flattened, are the batch rows): row_offset whole rows of the global batch
// come before it. 0 when the tensor does not split into `rows` equal rows.
inline std::uint64_t global_index_offset(const RunState& s, std::int64_t numel) {
  if (s.row_offset <= 0 || s.rows <= 0 || numel % s.rows != 0) return 0;
  return static_cast<std::uint64_t>(s.row_offset) * static_cast<std::uint64_t>(numel / s.rows);
}

struct KernelArgs {
  const GraphView& g;
  int node = -1;
  std::span<const TensorView> in;
  TensorView out;
  const RunState& state;

  const Node& n() const { return g.node(node); }
  const Attrs& attr() const { return g.attr(node); }
  std::string name() const { return g.name(node); }
};

namespace kernel {

// Strides that read `v` as if broadcast to `out_rank` dims of sizes `out_dims` (0 on broadcast
// dims). Assumes v's dims already broadcast to out_dims (checked by the shape rule).
inline void broadcast_strides(const TensorView& v, int out_rank, const std::int64_t* out_dims,
                              std::int64_t* strides) {
  for (int k = 0; k < out_rank; ++k) {
    const int iv = v.rank - out_rank + k;
    strides[k] = (iv < 0 || v.dims[iv] != out_dims[k]) ? 0 : v.strides[iv];
  }
}

// Calls fn(flat_out_index, offsets...) for every element of `out`, where each offset is the
// element offset into the corresponding input under broadcasting.
template <int N, class Fn>
void for_each_broadcast(const TensorView& out, const TensorView* const (&ins)[N], Fn&& fn) {
  std::int64_t st[N][kMaxRank] = {};
  for (int k = 0; k < N; ++k) broadcast_strides(*ins[k], out.rank, out.dims, st[k]);
  std::int64_t idx[kMaxRank] = {};
  std::int64_t off[N] = {};
  const std::int64_t total = out.numel();
  for (std::int64_t flat = 0; flat < total; ++flat) {
    fn(flat, off);
    for (int d = out.rank - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < N; ++k) off[k] += st[k][d];
      if (idx[d] < out.dims[d]) break;
      for (int k = 0; k < N; ++k) off[k] -= st[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

// Element offset of a strided view for a flat row-major index.
inline std::int64_t offset_of(const TensorView& v, std::int64_t flat) {
  std::int64_t off = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    off += (flat % v.dims[d]) * v.strides[d];
    flat /= v.dims[d];
  }
  return off;
}

// Reads element `off` of a view of any dtype as double (for generic kernels).
inline double load(const TensorView& v, std::int64_t off) {
  switch (v.dtype) {
    case DType::f32:
      return v.as<const float>()[off];
    case DType::f64:
      return v.as<const double>()[off];
    case DType::i32:
      return v.as<const std::int32_t>()[off];
    case DType::i64:
      return static_cast<double>(v.as<const std::int64_t>()[off]);
    case DType::boolean:
      return v.as<const bool>()[off] ? 1.0 : 0.0;
    case DType::bf16: {
      const std::uint16_t bits = v.as<const std::uint16_t>()[off];
      const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
      float f;
      __builtin_memcpy(&f, &w, 4);
      return f;
    }
  }
  return 0;
}

// Branch-free, so that the CPU cast's loop over it vectorises (ops/cast/cpu.cpp).
inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t w;
  __builtin_memcpy(&w, &f, 4);
  const std::uint32_t rounded = (w + 0x7fffu + ((w >> 16) & 1u)) >> 16;  // nearest even
  const std::uint32_t nan = (w >> 16) | 0x40u;                           // quiet NaN
  return static_cast<std::uint16_t>((w & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

// Rounds any value (f64, i64) to the nearest bf16, ties to even, in one rounding.
// NOTE: rounding to f32 first and then to bf16 rounds twice (1 + 2^-8 + 2^-30 would become the
// tie 1 + 2^-8 and then 1). Rounding to f32 *to odd* (truncate, then set the last bit when
// inexact) keeps the information a second rounding needs, as f32 has 16 more bits than bf16.
inline std::uint16_t to_bf16(long double x) {
  float f = static_cast<float>(x);
  if (x == x && std::isfinite(f) && static_cast<long double>(f) != x) {
    if (std::fabs(static_cast<long double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);
    std::uint32_t w;
    __builtin_memcpy(&w, &f, 4);
    w |= 1u;
    __builtin_memcpy(&f, &w, 4);
  }
  return float_to_bf16(f);
}

// NOTE: float -> int truncates toward zero, saturates at the type's limits and maps NaN to 0
// (a plain static_cast would be undefined behaviour outside the range).
template <class I>
I to_integer(long double x) {
  constexpr long double lo = static_cast<long double>(std::numeric_limits<I>::min());  // -2^(b-1)
  if (x != x) return 0;
  if (x >= -lo) return std::numeric_limits<I>::max();
  if (x < lo) return std::numeric_limits<I>::min();
  return static_cast<I>(x);
}

// Reads element `off` exactly: every stag dtype, i64 included, fits a long double's mantissa
// (64 bits on x86-64, 113 on AArch64). Used where a detour through double would round.
inline long double load_exact(const TensorView& v, std::int64_t off) {
  if (v.dtype == DType::i64) return static_cast<long double>(v.as<const std::int64_t>()[off]);
  return load(v, off);
}

// Writes `x` to element `off`, rounding once to the view's dtype (see to_bf16, to_integer).
inline void store_exact(const TensorView& v, std::int64_t off, long double x) {
  switch (v.dtype) {
    case DType::f32:
      v.as<float>()[off] = static_cast<float>(x);
      return;
    case DType::f64:
      v.as<double>()[off] = static_cast<double>(x);
      return;
    case DType::i32:
      v.as<std::int32_t>()[off] = to_integer<std::int32_t>(x);
      return;
    case DType::i64:
      v.as<std::int64_t>()[off] = to_integer<std::int64_t>(x);
      return;
    case DType::boolean:
      v.as<bool>()[off] = x != 0;
      return;
    case DType::bf16:
      v.as<std::uint16_t>()[off] = to_bf16(x);
      return;
  }
}

inline void store(const TensorView& v, std::int64_t off, double x) {
  store_exact(v, off, x);
}

// Dispatches a kernel body templated on the float type (float in f32 runs, double in f64 runs).
template <class Fn>
void with_float(DType t, Fn&& fn) {
  if (t == DType::f64)
    fn(double{});
  else if (t == DType::f32)
    fn(float{});
  else
    throw Error("stag: internal error: float kernel called on a non-float tensor");
}

}  // namespace kernel
}  // namespace stag

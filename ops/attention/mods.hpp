// User-defined score and mask functions of the fused attention (FlexAttention's score_mod and
// mask_mod), compiled into the kernels' inner loops: no interpreter, no JIT.
//
//   score_mod: (score, b, h, q_idx, kv_idx, captured...) -> modified score
//   mask_mod:  (b, h, q_idx, kv_idx, captured...)        -> bool (true: the key is kept)
//
// Both are generic lambdas without captures (`[](auto s, auto b, ...)`). The indices are
// std::int64_t (q_idx in [0, Sq), kv_idx in [0, Sk)); the score is an attn::Dual, a value that
// carries its derivatives, with the arithmetic, comparisons and the functions below (exp, log,
// tanh, sigmoid, sqrt, abs, minimum, maximum, clamp, where). Tensors the function reads (ALiBi
// slopes, a learned bias table, document ids) are passed to score_mod(f, t...) / mask_mod(f,
// t...) and arrive as the trailing arguments, indexed with one integer per dim: `bias(bucket,
// h)`. A float tensor read by a score_mod gets its gradient (the kernels evaluate the function
// on Dual numbers in the backward pass and scatter-add dS times the partials). An index outside
// a captured tensor is a stag::Error after the step (never an out-of-bounds read).
//
// The same lambda is instantiated for the f32 tiles of the CPU kernel, for the f32 and f64
// reference kernels and for the derivative passes; the kernels call one function per 64 x 64
// tile, whose loop over the tile's elements has the lambda inlined.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include <stag/graph/dtype.hpp>
#include <stag/graph/fixed_string.hpp>
#include <stag/graph/report.hpp>

namespace stag::attn {

// Rows of a query tile and of a key tile: the kernels' tiles (tiled.hpp, tiled_bf16.hpp) and
// the tiles the score_mod / mask_mod tile functions below are called on.
inline constexpr int kTile = 64;
inline constexpr int kMaxCaptures = 2;  // tensors captured by score_mod and mask_mod together
inline constexpr int kMaxLoads = 4;     // reads of float captures per score, with gradients
inline constexpr int kMaxCaptureRank = 4;

// ---- Dual numbers: a value and its partial derivatives --------------------------------------
// Slot 0 is d/d(score); slots 1.. are the float captures' reads, in the order they happen.
template <class T, int N>
struct Dual {
  T v{};
  std::array<T, N> d{};
};

template <class X>
struct is_dual : std::false_type {};
template <class T, int N>
struct is_dual<Dual<T, N>> : std::true_type {};
template <class X>
concept Number = std::is_arithmetic_v<X>;

template <class T, int N>
inline Dual<T, N> chain(const Dual<T, N>& x, T value, T slope) {
  Dual<T, N> r{value};
  for (int i = 0; i < N; ++i) r.d[i] = x.d[i] * slope;
  return r;
}

template <class T, int N>
inline Dual<T, N> operator-(const Dual<T, N>& a) {
  return chain(a, -a.v, T(-1));
}
template <class T, int N>
inline Dual<T, N> operator+(const Dual<T, N>& a, const Dual<T, N>& b) {
  Dual<T, N> r{a.v + b.v};
  for (int i = 0; i < N; ++i) r.d[i] = a.d[i] + b.d[i];
  return r;
}
template <class T, int N>
inline Dual<T, N> operator-(const Dual<T, N>& a, const Dual<T, N>& b) {
  Dual<T, N> r{a.v - b.v};
  for (int i = 0; i < N; ++i) r.d[i] = a.d[i] - b.d[i];
  return r;
}
template <class T, int N>
inline Dual<T, N> operator*(const Dual<T, N>& a, const Dual<T, N>& b) {
  Dual<T, N> r{a.v * b.v};
  for (int i = 0; i < N; ++i) r.d[i] = a.d[i] * b.v + b.d[i] * a.v;
  return r;
}
template <class T, int N>
inline Dual<T, N> operator/(const Dual<T, N>& a, const Dual<T, N>& b) {
  Dual<T, N> r{a.v / b.v};
  for (int i = 0; i < N; ++i) r.d[i] = (a.d[i] - r.v * b.d[i]) / b.v;
  return r;
}
template <class T, int N, Number A>
inline Dual<T, N> operator+(const Dual<T, N>& a, A b) {
  return {a.v + static_cast<T>(b), a.d};
}
template <class T, int N, Number A>
inline Dual<T, N> operator+(A a, const Dual<T, N>& b) {
  return b + a;
}
template <class T, int N, Number A>
inline Dual<T, N> operator-(const Dual<T, N>& a, A b) {
  return {a.v - static_cast<T>(b), a.d};
}
template <class T, int N, Number A>
inline Dual<T, N> operator-(A a, const Dual<T, N>& b) {
  return chain(b, static_cast<T>(a) - b.v, T(-1));
}
template <class T, int N, Number A>
inline Dual<T, N> operator*(const Dual<T, N>& a, A b) {
  return chain(a, a.v * static_cast<T>(b), static_cast<T>(b));
}
template <class T, int N, Number A>
inline Dual<T, N> operator*(A a, const Dual<T, N>& b) {
  return b * a;
}
template <class T, int N, Number A>
inline Dual<T, N> operator/(const Dual<T, N>& a, A b) {
  return chain(a, a.v / static_cast<T>(b), T(1) / static_cast<T>(b));
}
template <class T, int N, Number A>
inline Dual<T, N> operator/(A a, const Dual<T, N>& b) {
  const T r = static_cast<T>(a) / b.v;
  return chain(b, r, -r / b.v);
}

// Comparisons read the values.
template <class X>
inline auto value_of(const X& x) {
  if constexpr (is_dual<X>::value)
    return x.v;
  else
    return x;
}
#define STAG_ATTN_COMPARE(op)                                                            \
  template <class A, class B>                                                            \
  requires(is_dual<A>::value || is_dual<B>::value) inline bool operator op(const A& a,   \
                                                                           const B& b) { \
    return value_of(a) op value_of(b);                                                   \
  }
STAG_ATTN_COMPARE(<)
STAG_ATTN_COMPARE(<=)
STAG_ATTN_COMPARE(>)
STAG_ATTN_COMPARE(>=)
STAG_ATTN_COMPARE(==)
STAG_ATTN_COMPARE(!=)
#undef STAG_ATTN_COMPARE

template <class T, int N>
inline Dual<T, N> exp(const Dual<T, N>& x) {
  const T e = std::exp(x.v);
  return chain(x, e, e);
}
template <class T, int N>
inline Dual<T, N> log(const Dual<T, N>& x) {
  return chain(x, std::log(x.v), T(1) / x.v);
}
template <class T, int N>
inline Dual<T, N> tanh(const Dual<T, N>& x) {
  const T t = std::tanh(x.v);
  return chain(x, t, T(1) - t * t);
}
template <class T, int N>
inline Dual<T, N> sigmoid(const Dual<T, N>& x) {
  const T s = T(1) / (T(1) + std::exp(-x.v));
  return chain(x, s, s * (T(1) - s));
}
template <class T, int N>
inline Dual<T, N> sqrt(const Dual<T, N>& x) {
  const T r = std::sqrt(x.v);
  return chain(x, r, T(0.5) / r);
}
template <class T, int N>
inline Dual<T, N> abs(const Dual<T, N>& x) {
  return chain(x, std::abs(x.v), x.v < 0 ? T(-1) : T(1));
}

// Lifts a number or a Dual of the same kind into Dual<T, N>.
template <class T, int N, class X>
inline Dual<T, N> lift(const X& x) {
  if constexpr (is_dual<X>::value)
    return x;
  else
    return Dual<T, N>{static_cast<T>(x)};
}
template <class A, class B>
struct dual_of {
  using type = std::conditional_t<is_dual<A>::value, A, B>;
};

// Selects a where c holds, else b (the gradient goes to the one selected).
template <class A, class B>
requires(is_dual<A>::value || is_dual<B>::value) inline auto where(bool c, const A& a, const B& b) {
  using D = typename dual_of<A, B>::type;
  using T = decltype(D::v);
  return c ? lift<T, std::tuple_size_v<decltype(D::d)>>(a)
           : lift<T, std::tuple_size_v<decltype(D::d)>>(b);
}
// The smaller (larger) of a and b; a tie selects a.
template <class A, class B>
requires(is_dual<A>::value || is_dual<B>::value) inline auto minimum(const A& a, const B& b) {
  return where(!(value_of(b) < value_of(a)), a, b);
}
template <class A, class B>
requires(is_dual<A>::value || is_dual<B>::value) inline auto maximum(const A& a, const B& b) {
  return where(!(value_of(b) > value_of(a)), a, b);
}
// x limited to [lo, hi]; the gradient is 1 inside and 0 outside.
template <class T, int N, Number L, Number H>
inline Dual<T, N> clamp(const Dual<T, N>& x, L lo, H hi) {
  if (x.v < static_cast<T>(lo)) return Dual<T, N>{static_cast<T>(lo)};
  if (x.v > static_cast<T>(hi)) return Dual<T, N>{static_cast<T>(hi)};
  return x;
}

// ---- captured tensors -----------------------------------------------------------------------

// A captured tensor as the kernels see it: element strides, any layout.
struct CapView {
  const void* data = nullptr;
  int rank = 0;
  std::int64_t dims[kMaxCaptureRank] = {}, strides[kMaxCaptureRank] = {};
};

// The first bad read of a run (an index outside a captured tensor), or more float reads per
// score than the gradient tape holds; the kernels throw after the parallel region.
struct Fault {
  std::atomic<bool> hit{false};
  std::atomic<bool> overflow{false};
  int cap = -1, rank = 0;
  std::int64_t idx[kMaxCaptureRank] = {}, dims[kMaxCaptureRank] = {};
  void reset() {
    hit.store(false);
    overflow.store(false);
  }
  void record(int c, const CapView& v, const std::int64_t* ix) {
    bool expect = false;
    if (!hit.compare_exchange_strong(expect, true)) return;
    cap = c;
    rank = v.rank;
    for (int d = 0; d < v.rank; ++d) idx[d] = ix[d], dims[d] = v.dims[d];
  }
};

// The float reads of one score evaluation: which capture and which element (row-major index).
struct Tape {
  int n = 0;
  int cap[kMaxLoads] = {};
  std::int64_t at[kMaxLoads] = {};
};

// What one run of a kernel gives the functions: the captured tensors (score_mod's first).
struct ModRun {
  CapView caps[kMaxCaptures];
  Fault* fault = nullptr;
};

// The element type a captured tensor is read as; float tensors are read in the kernel's type T.
template <DType D, class T>
using cap_elem_t = std::conditional_t<
    is_float(D), T,
    std::conditional_t<D == DType::boolean, bool,
                       std::conditional_t<D == DType::i64, std::int64_t, std::int32_t>>>;

// The accessor a function receives for one captured tensor: cap(i, j, ...) with one integer
// per dim. Float tensors give Dual numbers (recorded on the tape when gradients are wanted),
// integers std::int64_t, bool tensors bool.
template <class E, int Rank, class T, int N>
struct Cap {
  const CapView* view = nullptr;
  Fault* fault = nullptr;
  Tape* tape = nullptr;
  int id = 0;

  // The tensor's size along dim d (the fusion pass's bias and keep functions broadcast dims
  // of size 1 with it).
  std::int64_t dim(int d) const { return view->dims[d]; }

  template <class... I>
  auto operator()(I... i) const {
    STAG_SHAPE_CHECK(sizeof...(I) == Rank,
                     "stag::sdpa: a tensor captured by score_mod / mask_mod is indexed with one "
                     "index per dim (t(i, j) for a 2-d tensor) (its rank, the indices given)",
                     Shape<Rank>, Shape<static_cast<int>(sizeof...(I))>);
    static_assert((std::is_integral_v<I> && ...),
                  "stag::sdpa: captured tensors are indexed with integers (b, h, q_idx, kv_idx or "
                  "integers computed from them)");
    const std::int64_t ix[Rank > 0 ? Rank : 1] = {static_cast<std::int64_t>(i)...};
    std::int64_t off = 0, lin = 0;
    bool ok = true;
    for (int d = 0; d < Rank; ++d) {
      ok = ok && ix[d] >= 0 && ix[d] < view->dims[d];
      off += ix[d] * view->strides[d];
      lin = lin * view->dims[d] + ix[d];
    }
    if (!ok) fault->record(id, *view, ix);
    const E x = ok ? static_cast<const E*>(view->data)[off] : E{};
    if constexpr (std::is_floating_point_v<E>) {
      Dual<T, N> r{static_cast<T>(x)};
      if constexpr (N > 1) {
        if (tape != nullptr && ok) {
          if (tape->n < kMaxLoads) {
            r.d[static_cast<std::size_t>(1 + tape->n)] = T(1);
            tape->cap[tape->n] = id;
            tape->at[tape->n] = lin;
            ++tape->n;
          } else {
            fault->overflow.store(true, std::memory_order_relaxed);
          }
        }
      }
      return r;
    } else if constexpr (std::is_same_v<E, bool>) {
      return static_cast<bool>(x);
    } else {
      return static_cast<std::int64_t>(x);
    }
  }
};

// A captured tensor's type-level facts.
template <int Rank, DType D>
struct CapSpec {
  static constexpr int rank = Rank;
  static constexpr DType dtype = D;
};
template <class... C>
struct CapList {
  static constexpr int size = sizeof...(C);
};
struct NoScore {};
struct NoMask {};

// ---- the descriptor the kernels call through ------------------------------------------------
// One constexpr object of static storage per (score_mod, mask_mod, captures) combination; the
// attention node's Attrs::ext points at it.
struct Mods {
  std::string_view score_name, mask_name;  // empty: none
  int n_score = 0, n_mask = 0;             // captured tensors of each (score_mod's first)
  std::uint8_t cap_float = 0;              // bit k: capture k is a float tensor
  // f32 tiles of the CPU kernel. A tile is 64 floats per row; element (r, j) is query q0 + r
  // and key k0 + j, for r < rows and j < cols.
  // score_tile: s = score_mod(s) in place.
  void (*score_tile)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q0,
                     std::int64_t rows, std::int64_t k0, std::int64_t cols, float* s) = nullptr;
  // score_grad_tile: ds (dL / d modified score) becomes dL / d raw score, from the raw scores;
  // adds ds times the partials of each float read into cap_grad[capture] (row-major, as the
  // capture's shape; null entries are skipped). Elements with ds == 0 are skipped.
  void (*score_grad_tile)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q0,
                          std::int64_t rows, std::int64_t k0, std::int64_t cols, const float* raw,
                          float* ds, float* const* cap_grad) = nullptr;
  // The same for d/d(score) only, when no captured tensor's gradient is wanted (cheaper: no
  // tape, one derivative slot).
  void (*score_dtile)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q0,
                      std::int64_t rows, std::int64_t k0, std::int64_t cols, const float* raw,
                      float* ds, float* const* cap_grad) = nullptr;
  // mask_tile: the number of kept elements; with s, masked elements of s become -inf.
  std::int64_t (*mask_tile)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q0,
                            std::int64_t rows, std::int64_t k0, std::int64_t cols,
                            float* s) = nullptr;
  // One element, for the reference kernels (f32 and f64): the modified score and its
  // derivative in *ds; with cap_grad, also adds dy times the capture partials there.
  float (*score_f)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t kv,
                   float s, float* ds, double dy, double* const* cap_grad) = nullptr;
  double (*score_d)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t kv,
                    double s, double* ds, double dy, double* const* cap_grad) = nullptr;
  bool (*mask_f)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q,
                 std::int64_t kv) = nullptr;
  bool (*mask_d)(const ModRun&, std::int64_t b, std::int64_t h, std::int64_t q,
                 std::int64_t kv) = nullptr;
};

template <class SF, class SC, class MF, class MC>
struct ModsImpl;

template <class SF, class... SC, class MF, class... MC>
struct ModsImpl<SF, CapList<SC...>, MF, CapList<MC...>> {
  static constexpr int ns = sizeof...(SC), nm = sizeof...(MC);
  static constexpr bool score_grads = ((is_float(SC::dtype)) || ... || false);
  // The Dual width of the derivative pass: d/ds, plus the tape's slots when floats are read.
  static constexpr int kGradWidth = score_grads ? 1 + kMaxLoads : 1;

  template <class T, int N, std::size_t... I>
  static auto score_caps(const ModRun& run, Tape* tape, std::index_sequence<I...>) {
    (void)run, (void)tape;  // unused without captures
    return std::tuple<Cap<cap_elem_t<SC::dtype, T>, SC::rank, T, N>...>{
        Cap<cap_elem_t<SC::dtype, T>, SC::rank, T, N>{&run.caps[I], run.fault, tape,
                                                      static_cast<int>(I)}...};
  }
  template <class T, std::size_t... I>
  static auto mask_caps(const ModRun& run, std::index_sequence<I...>) {
    (void)run;
    return std::tuple<Cap<cap_elem_t<MC::dtype, T>, MC::rank, T, 0>...>{
        Cap<cap_elem_t<MC::dtype, T>, MC::rank, T, 0>{&run.caps[ns + I], run.fault, nullptr,
                                                      static_cast<int>(ns + I)}...};
  }

  template <class T, int N, class Caps>
  static Dual<T, N> eval_score(const Caps& caps, const Dual<T, N>& s, std::int64_t b,
                               std::int64_t h, std::int64_t q, std::int64_t kv) {
    return std::apply([&](const auto&... c) { return lift<T, N>(SF{}(s, b, h, q, kv, c...)); },
                      caps);
  }
  template <class Caps>
  static bool eval_mask(const Caps& caps, std::int64_t b, std::int64_t h, std::int64_t q,
                        std::int64_t kv) {
    return std::apply([&](const auto&... c) { return static_cast<bool>(MF{}(b, h, q, kv, c...)); },
                      caps);
  }

  static void score_tile(const ModRun& run, std::int64_t b, std::int64_t h, std::int64_t q0,
                         std::int64_t rows, std::int64_t k0, std::int64_t cols, float* s) {
    const auto caps = score_caps<float, 0>(run, nullptr, std::make_index_sequence<ns>{});
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = s + r * kTile;
      for (std::int64_t j = 0; j < cols; ++j)
        row[j] = eval_score<float, 0>(caps, Dual<float, 0>{row[j]}, b, h, q0 + r, k0 + j).v;
    }
  }
  template <int N>
  static void score_grad_tile(const ModRun& run, std::int64_t b, std::int64_t h, std::int64_t q0,
                              std::int64_t rows, std::int64_t k0, std::int64_t cols,
                              const float* raw, float* ds, float* const* cap_grad) {
    Tape tape;
    const auto caps =
        score_caps<float, N>(run, N > 1 ? &tape : nullptr, std::make_index_sequence<ns>{});
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < cols; ++j) {
        const std::int64_t e = r * kTile + j;
        const float g = ds[e];
        if (g == 0.f) continue;
        tape.n = 0;
        Dual<float, N> x{raw[e]};
        x.d[0] = 1.f;
        const Dual<float, N> y = eval_score<float, N>(caps, x, b, h, q0 + r, k0 + j);
        ds[e] = g * y.d[0];
        if constexpr (N > 1)
          for (int t = 0; t < tape.n; ++t)
            if (float* cg = cap_grad[tape.cap[t]]) cg[tape.at[t]] += g * y.d[1 + t];
      }
  }
  static std::int64_t mask_tile(const ModRun& run, std::int64_t b, std::int64_t h, std::int64_t q0,
                                std::int64_t rows, std::int64_t k0, std::int64_t cols, float* s) {
    const auto caps = mask_caps<float>(run, std::make_index_sequence<nm>{});
    std::int64_t kept = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t j = 0; j < cols; ++j) {
        const bool k = eval_mask(caps, b, h, q0 + r, k0 + j);
        kept += k;
        if (s != nullptr && !k) s[r * kTile + j] = -std::numeric_limits<float>::infinity();
      }
    return kept;
  }
  template <class T>
  static T score_one(const ModRun& run, std::int64_t b, std::int64_t h, std::int64_t q,
                     std::int64_t kv, T s, T* ds, double dy, double* const* cap_grad) {
    constexpr int N = kGradWidth;
    Tape tape;
    const auto caps = score_caps<T, N>(run, &tape, std::make_index_sequence<ns>{});
    Dual<T, N> x{s};
    x.d[0] = T(1);
    const Dual<T, N> y = eval_score<T, N>(caps, x, b, h, q, kv);
    *ds = y.d[0];
    if constexpr (N > 1)
      if (cap_grad != nullptr)
        for (int t = 0; t < tape.n; ++t)
          if (double* cg = cap_grad[tape.cap[t]]) cg[tape.at[t]] += dy * y.d[1 + t];
    return y.v;
  }
  template <class T>
  static bool mask_one(const ModRun& run, std::int64_t b, std::int64_t h, std::int64_t q,
                       std::int64_t kv) {
    return eval_mask(mask_caps<T>(run, std::make_index_sequence<nm>{}), b, h, q, kv);
  }

  template <fixed_string SN, fixed_string MN>
  static constexpr Mods descriptor() {
    Mods m;
    constexpr bool has_score = !std::is_same_v<SF, NoScore>, has_mask = !std::is_same_v<MF, NoMask>;
    m.score_name = has_score ? SN.view() : std::string_view{};
    m.mask_name = has_mask ? MN.view() : std::string_view{};
    m.n_score = ns;
    m.n_mask = nm;
    int k = 0;
    ((m.cap_float |= is_float(SC::dtype) ? static_cast<std::uint8_t>(1u << k) : 0, ++k), ...);
    ((m.cap_float |= is_float(MC::dtype) ? static_cast<std::uint8_t>(1u << k) : 0, ++k), ...);
    if constexpr (has_score) {
      m.score_tile = &score_tile;
      m.score_grad_tile = &score_grad_tile<kGradWidth>;
      m.score_dtile = &score_grad_tile<1>;
      m.score_f = &score_one<float>;
      m.score_d = &score_one<double>;
    }
    if constexpr (has_mask) {
      m.mask_tile = &mask_tile;
      m.mask_f = &mask_one<float>;
      m.mask_d = &mask_one<double>;
    }
    return m;
  }
};

template <fixed_string SN, class SF, class SC, fixed_string MN, class MF, class MC>
inline constexpr Mods kMods = ModsImpl<SF, SC, MF, MC>::template descriptor<SN, MN>();

// What a score_mod / mask_mod is called with at compile time, for the front-end's checks.
template <class SF, class T, class... SC>
using score_result_t =
    std::invoke_result_t<SF, Dual<T, 0>, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         Cap<cap_elem_t<SC::dtype, T>, SC::rank, T, 0>...>;
template <class MF, class T, class... MC>
using mask_result_t =
    std::invoke_result_t<MF, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         Cap<cap_elem_t<MC::dtype, T>, MC::rank, T, 0>...>;

}  // namespace stag::attn

namespace stag {
// The functions a score_mod calls, also as stag::exp(s) and so on (the graph ops of the same
// names take tensors; these take the scalar Dual of a score).
using attn::abs;
using attn::clamp;
using attn::exp;
using attn::log;
using attn::maximum;
using attn::minimum;
using attn::sigmoid;
using attn::sqrt;
using attn::tanh;
using attn::where;
}  // namespace stag

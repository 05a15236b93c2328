// Helpers for own CPU kernels: a branch-free exp the compiler can vectorise. The kernels
// (ops/*/cpu.cpp) are compiled for the building machine's ISA (CMake option STAG_NATIVE,
// -march=native): function multi-versioning (target_clones) was measured first, but g++ 12
// keeps its generic tuning inside the clones and vectorised the hot loops only 128 bits wide.
// Loops with conditions load their data unconditionally and select afterwards: a conditional
// load of a float under a bool mask does not vectorise.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Marks a hot loop function (kept as a hook for per-function ISA attributes).
#define STAG_VECTORIZED

namespace stag::vec {

// exp(x) for floats: x = n*ln2 + r with |r| <= ln2/2, exp(r) by a degree-6 polynomial,
// 2^n through the exponent bits. Relative error about 2e-7 on [-87, 88].
// NOTE: inputs below -87.3 flush to 0 and above 88.7 saturate to FLT_MAX (no inf), and NaN
// is not propagated (callers that need it check separately).
// Its pieces, shared with the vector-typed version in ops/attention/tile_math.hpp (exp_v): the
// clamp, ln 2 split into an exact high part and a low correction, and exp(r) on the reduced
// argument (T is float or a GCC vector of floats).
inline constexpr float kExpMin = -87.3f, kExpMax = 88.7f, kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
template <class T>
inline T exp_reduced(T r) {
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

inline float exp_approx(float x) {
  x = x < kExpMin ? kExpMin : (x > kExpMax ? kExpMax : x);
  const float n = std::nearbyint(x * kLog2e);
  const float r = x - n * kLn2Hi - n * kLn2Lo;
  const float p = exp_reduced(r);
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// max over x[0, n) (over the kept positions with a mask), -inf when there is none. NaN is
// skipped. NOTE: not `omp simd reduction(max : m)`: OpenMP starts each lane's copy at the lowest
// value of the type, which clang takes as -FLT_MAX and g++ as -inf, so with clang a fully masked
// attention row came back as -FLT_MAX instead of -inf (and its softmax as 0 * inf = NaN). Fixed
// lanes that start at -inf vectorise with both compilers.
inline float max_reduce(const float* __restrict x, std::int64_t n) {
  constexpr int kLanes = 16;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  float lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = ninf;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
  float m = ninf;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (int j = 0; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
  return m;
}
inline float max_reduce(const float* __restrict x, const std::uint8_t* __restrict keep,
                        std::int64_t n) {
  constexpr int kLanes = 16;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  float lane[kLanes];
  for (int j = 0; j < kLanes; ++j) lane[j] = ninf;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) {
      const float v = keep[i + j] ? x[i + j] : ninf;
      lane[j] = v > lane[j] ? v : lane[j];
    }
  float m = ninf;
  for (; i < n; ++i) {
    const float v = keep[i] ? x[i] : ninf;
    m = v > m ? v : m;
  }
  for (int j = 0; j < kLanes; ++j) m = lane[j] > m ? lane[j] : m;
  return m;
}

}  // namespace stag::vec

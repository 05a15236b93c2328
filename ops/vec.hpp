// Helpers for own CPU kernels: function multi-versioning (each hot loop is compiled for
// x86-64-v4 (AVX-512), v3 (AVX2) and the baseline, and the loader picks the best one for the
// machine it runs on), and a branch-free exp the compiler can vectorise.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__clang__) ? __clang_major__ >= 14 : __GNUC__ >= 12)
#define STAG_VECTORIZED __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define STAG_VECTORIZED
#endif

namespace stag::vec {

// exp(x) for floats: x = n*ln2 + r with |r| <= ln2/2, exp(r) by a degree-6 polynomial,
// 2^n through the exponent bits. Relative error about 2e-7 on [-87, 88].
// NOTE: inputs below -87.3 flush to 0 and above 88.7 saturate to FLT_MAX (no inf), and NaN
// is not propagated (callers that need it check separately).
inline float exp_approx(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  const float n = std::nearbyint(x * 1.44269504088896341f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace stag::vec

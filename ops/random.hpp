// Counter-based random numbers: a value is a pure function of (seed, step, salt, index), so
// dropout masks and initialisations do not depend on thread scheduling, and a backward pass can
// regenerate the forward pass's mask instead of storing it.
#pragma once

#include <cstdint>

namespace stag::random {

// SplitMix64's finaliser: a bijective 64-bit mixer with full avalanche.
constexpr std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The stream of one (seed, step, salt); element i of it is mix(stream ^ i). Kernels compute the
// stream once and mix per element (one multiply-xorshift round pair, vectorisable).
constexpr std::uint64_t stream(std::uint64_t seed, std::uint64_t step, std::uint64_t salt) {
  std::uint64_t h = mix(seed + 0x9e3779b97f4a7c15ull);
  h = mix(h ^ (step + 0x632be59bd9b4e019ull));
  return mix(h ^ (salt * 0x85ebca6b2ull + 0x27d4eb2f165667c5ull));
}

constexpr std::uint64_t bits(std::uint64_t seed, std::uint64_t step, std::uint64_t salt,
                             std::uint64_t index) {
  return mix(stream(seed, step, salt) ^ index);
}

// uniform(...) >= p exactly when (bits(...) >> 11) >= keep_threshold(p), for p in [0, 1).
constexpr std::uint64_t keep_threshold(double p) {
  const double t = p * 0x1.0p53;  // exact: scaling by a power of two
  const auto k = static_cast<std::uint64_t>(t);
  return static_cast<double>(k) == t ? k : k + 1;  // ceil
}

// Uniform in [0, 1) with 53 random bits.
constexpr double uniform(std::uint64_t seed, std::uint64_t step, std::uint64_t salt,
                         std::uint64_t index) {
  return static_cast<double>(bits(seed, step, salt, index) >> 11) * 0x1.0p-53;
}

}  // namespace stag::random

// Compile-time strings usable as template arguments (symbol names, input names, op names).
// Extend with care: every member must stay structural so the type can be a template parameter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stag {

template <std::size_t N>
struct fixed_string {
  char chars[N]{};
  constexpr fixed_string(const char (&s)[N]) {  // NOLINT: implicit on purpose, `Sym<"batch">`.
    for (std::size_t i = 0; i < N; ++i) chars[i] = s[i];
  }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  constexpr std::size_t size() const { return N - 1; }
};

// FNV-1a, 32 bits. Symbols and names are compared by this hash inside graphs; the builder
// detects the (unlikely) case of two different names with the same hash in one graph.
constexpr std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

}  // namespace stag

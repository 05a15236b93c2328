// Element types of graph tensors. f64 exists for gradient checks, bf16 for storage (cast to f32
// before arithmetic). To add a type, extend DType and the three tables below.
#pragma once

#include <cstdint>
#include <string_view>

namespace stag {

enum class DType : std::uint8_t { f32, f64, bf16, i32, i64, boolean };

// What a bool token mask means, where a graph input or an array says so: keep (true at real
// tokens, stag's convention) or padding (true at padding, PyTorch's key_padding_mask). A graph
// input declared with keep_input / padding_input carries it, so do the batches' masks
// (runtime/array.hpp), and a session refuses a mask fed to an input of the other polarity.
enum class MaskRole : std::uint8_t { none, keep, padding };
constexpr std::string_view mask_role_text(MaskRole r) {
  return r == MaskRole::keep      ? "a keep mask (true at real tokens)"
         : r == MaskRole::padding ? "a padding mask (true at padding)"
                                  : "a bool tensor";
}

inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType bf16 = DType::bf16;
inline constexpr DType i32 = DType::i32;
inline constexpr DType i64 = DType::i64;
inline constexpr DType boolean = DType::boolean;

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f64:
      return "f64";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f64:
      return 8;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
    case DType::i64:
      return 8;
    case DType::boolean:
      return 1;
  }
  return 0;
}

constexpr bool is_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::bf16;
}
constexpr bool is_integer(DType t) {
  return t == DType::i32 || t == DType::i64;
}

}  // namespace stag

// What hf_tokenizer.cpp (reading, encoding, decoding) and hf_tokenizer_save.cpp (writing) share.
#pragma once

#include <string_view>

namespace stag::data::detail {

// The start of HfTokenizer's errors.
inline constexpr std::string_view kHfWho = "stag::data: HfTokenizer: ";
// "▁" (U+2581), SentencePiece's space.
inline constexpr std::string_view kMeta = "\u2581";

}  // namespace stag::data::detail

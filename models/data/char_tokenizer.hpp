// A character tokeniser: one id per Unicode code point (Chinese included), built from a corpus
// with a minimum count, with the special ids every stag tokeniser shares. Saved as JSON.
// To add a special token, append it to kSpecialTokens (ids are positions in that list).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stag::data {

// Special ids shared by CharTokenizer and BpeTokenizer: padding is 0 so that a zero-filled
// batch is all padding.
inline constexpr std::int32_t kPadId = 0, kUnkId = 1, kBosId = 2, kEosId = 3;
inline constexpr std::string_view kSpecialTokens[] = {"<pad>", "<unk>", "<bos>", "<eos>"};
inline constexpr std::int32_t kNumSpecial = 4;

struct EncodeOptions {
  bool add_bos = false;
  bool add_eos = false;
};

class CharTokenizer {
 public:
  CharTokenizer() = default;
  // Characters seen at least `min_count` times, most frequent first (ties by code point), at
  // most `max_vocab` ids in all (0: no limit). Invalid UTF-8 counts as U+FFFD.
  static CharTokenizer build(std::span<const std::string> texts, std::size_t min_count = 1,
                             std::size_t max_vocab = 0);

  // Ids of `text`'s code points; characters not in the vocabulary become kUnkId, invalid UTF-8
  // bytes become U+FFFD (kUnkId unless U+FFFD is in the vocabulary).
  std::vector<std::int32_t> encode(std::string_view text, EncodeOptions options = {}) const;
  // The text of `ids`. Special ids are skipped unless `keep_special`, which writes "<unk>" etc.
  // Throws stag::Error on an id outside the vocabulary.
  std::string decode(std::span<const std::int32_t> ids, bool keep_special = false) const;

  std::size_t vocab_size() const { return kNumSpecial + chars_.size(); }
  // The character of a non-special id.
  char32_t char_of(std::int32_t id) const;
  // The id of `c` (kUnkId when absent).
  std::int32_t id_of(char32_t c) const;

  std::string to_json() const;
  static CharTokenizer from_json(std::string_view json);  // throws stag::Error on bad input
  void save(const std::filesystem::path& path) const;
  static CharTokenizer load(const std::filesystem::path& path);

  bool operator==(const CharTokenizer& o) const { return chars_ == o.chars_; }

 private:
  void index();
  std::u32string chars_;  // id kNumSpecial + i is chars_[i]
  std::unordered_map<char32_t, std::int32_t> ids_;
};

}  // namespace stag::data

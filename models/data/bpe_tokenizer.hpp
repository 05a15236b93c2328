// A byte-level BPE tokeniser: ids for the 256 bytes plus merges learnt from a corpus, so any
// byte string (invalid UTF-8 included) encodes and decodes back exactly. Saved as JSON.
// Training is deterministic: the most frequent pair wins, ties go to the smaller (left, right) ids.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <stag/models/data/char_tokenizer.hpp>

namespace stag::data {

struct BpeTrainOptions {
  std::size_t min_frequency = 2;  // stop when the best pair occurs fewer times than this
};

class BpeTokenizer {
 public:
  // Ids 0-3 are the shared special tokens, 4-259 the bytes 0x00-0xFF, then one id per merge.
  static constexpr std::int32_t kFirstByteId = kNumSpecial;
  static constexpr std::int32_t kFirstMergeId = kNumSpecial + 256;

  // A tokeniser with no merges (every byte is one token).
  BpeTokenizer();
  // Learns merges until the vocabulary has `vocab_size` ids or no pair is frequent enough.
  // Merges never cross the pre-tokeniser's chunk boundaries (see pretokenize).
  static BpeTokenizer train(std::span<const std::string> texts, std::size_t vocab_size,
                            BpeTrainOptions options = {});

  std::vector<std::int32_t> encode(std::string_view bytes, EncodeOptions options = {}) const;
  // The exact bytes of `ids`; special ids are skipped unless `keep_special`. Throws stag::Error
  // on an id outside the vocabulary.
  std::string decode(std::span<const std::int32_t> ids, bool keep_special = false) const;

  std::size_t vocab_size() const { return token_bytes_.size(); }
  std::size_t num_merges() const { return merges_.size(); }
  // The bytes a token stands for ("<pad>" etc. for the special ids).
  const std::string& token_bytes(std::int32_t id) const;

  std::string to_json() const;
  static BpeTokenizer from_json(std::string_view json);  // throws stag::Error on bad input
  void save(const std::filesystem::path& path) const;
  static BpeTokenizer load(const std::filesystem::path& path);

  bool operator==(const BpeTokenizer& o) const { return merges_ == o.merges_; }

  // Splits text into the chunks BPE works inside: a run of letters (ASCII letters and all bytes
  // >= 0x80, so UTF-8 characters stay whole), of digits, or of punctuation, each with at most
  // one leading space; and runs of whitespace. Concatenating the chunks gives back `text`.
  static std::vector<std::string_view> pretokenize(std::string_view text);

 private:
  void add_merge(std::int32_t left, std::int32_t right);
  void encode_chunk(std::string_view chunk, std::vector<std::int32_t>& out) const;

  std::vector<std::pair<std::int32_t, std::int32_t>> merges_;  // merge i makes id kFirstMergeId + i
  std::vector<std::string> token_bytes_;
  std::unordered_map<std::uint64_t, std::int32_t> rank_;  // (left << 32 | right) -> merge index
};

}  // namespace stag::data

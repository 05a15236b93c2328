// The tokeniser a stag-train run uses (characters, byte-level BPE, or words for classification),
// learnt on the training split
// and stored inside the checkpoint's config JSON, so that a checkpoint alone can be evaluated,
// resumed or sampled from.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>

namespace stag::train_app {

// Words (see bow_words) to ids after the four special ids.
struct WordVocab {
  std::vector<std::string> words;
  std::unordered_map<std::string, std::int32_t> ids;
  std::vector<std::int32_t> encode(std::string_view text, data::EncodeOptions options = {}) const;
  std::string decode(std::span<const std::int32_t> ids) const;
  std::size_t vocab_size() const { return data::kNumSpecial + words.size(); }
  std::string to_json() const;
};

class TextTokenizer {
 public:
  // kind "char": the characters of `texts`, at most `max_vocab` ids (rarer ones are <unk>);
  // kind "bpe": byte-level BPE with `bpe_vocab` ids (at most `max_vocab`);
  // kind "word": the bag-of-words baseline's words (bow_words), most frequent first, at most
  // `max_vocab` ids; others are <unk>. Not reversible (decode joins words with spaces).
  static TextTokenizer learn(const std::string& kind, std::span<const std::string> texts,
                             std::size_t max_vocab, std::size_t bpe_vocab);
  // {"kind": "char"|"bpe", "tokenizer": <the tokeniser's own JSON>}.
  static TextTokenizer from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;

  std::vector<std::int32_t> encode(std::string_view text, data::EncodeOptions options = {}) const;
  std::string decode(std::span<const std::int32_t> ids) const;
  std::size_t vocab_size() const;
  const std::string& kind() const { return kind_; }
  // Characters (UTF-8 code points) a token stands for; <eos> counts as one (a document break).
  double chars_of(std::int32_t id) const;

 private:
  std::string kind_;
  std::variant<data::CharTokenizer, data::BpeTokenizer, WordVocab> tok_;
  std::vector<double> chars_;  // per id
  void index_chars();
};

}  // namespace stag::train_app

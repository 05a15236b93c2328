// The tokenisers of pretrained models: Hugging Face's byte-level BPE (GPT-2, Llama 3, Qwen2,
// SmolLM and most models since), read from GPT-2's `vocab.json` + `merges.txt` or from a
// `tokenizer.json`, encoding exactly as the reference implementations do (tested against
// GPT-2's own encoder, from npm, on every line of the fortunes).
//
// Encoding: the text is split at the added tokens ("<|endoftext|>", ...), each piece is
// pre-tokenised by the model's regular expression (GPT-2's, or the Split pattern of a
// tokenizer.json: Llama 3 and Qwen2 have their own), each chunk's bytes become the printable
// characters of GPT-2's byte-to-unicode table, and the chunk's merges are applied lowest rank
// first. Decoding maps the characters back to bytes, so any text comes back exactly.
//
// The regular expressions run in PCRE2 (Debian's libpcre2) with Unicode properties, as the
// references' do in Python's `regex`, Rust's `onig` or JavaScript.
//
// Llama 2's SentencePiece-style BPE (Llama 1/2, TinyLlama, Mistral 7B v0.1 layouts: byte
// fallback, "▁" for spaces) is the other model a tokenizer.json may hold: each piece between
// added tokens gets "▁" in front and every space becomes "▁" (the Prepend + Replace normaliser,
// or the Metaspace pre-tokeniser without splitting), the piece's characters become their
// tokens, a character that is no token becomes the "<0xXX>" tokens of its UTF-8 bytes, and the
// merges run as above on the whole piece. Decoding turns "▁" back into spaces, byte tokens into
// their bytes, and drops the one space in front. Tested against llama-tokenizer-js (npm) on
// every line of the fortunes. Not read: WordPiece and Unigram models, other normalisers (a
// tokenizer.json with one is refused, naming it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stag::data {

// GPT-2's pre-tokeniser: contractions, letters, numbers, other symbols (each with at most one
// leading space), and whitespace (the run before a word leaves it its last space).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// A token that is matched in the text before pre-tokenisation and never split or merged.
struct AddedToken {
  std::string content;
  std::int32_t id = 0;
  bool special = true;  // skipped by decode(..., skip_special = true)
};

class HfTokenizer {
 public:
  // GPT-2's files: `vocab.json` ({"token": id}) and `merges.txt` (an optional "#version" line,
  // then "left right" per line, best first). "<|endoftext|>" is an added special token when the
  // vocabulary has it, as in Hugging Face's GPT2Tokenizer.
  static HfTokenizer from_gpt2_files(const std::filesystem::path& vocab_json,
                                     const std::filesystem::path& merges_txt);
  // A `tokenizer.json` whose model is byte-level BPE or SentencePiece-style BPE. Byte-level:
  // its pre-tokeniser is GPT-2's ByteLevel (with or without the prefix space), or a Sequence of
  // a Split on a regular expression and a ByteLevel without regex (Llama 3, Qwen2).
  // SentencePiece-style (Llama 2): the normaliser Sequence [Prepend "▁", Replace " " -> "▁"]
  // and no pre-tokeniser, or a Metaspace pre-tokeniser that does not split; byte_fallback, or
  // an unk_token for characters that are no token. Added tokens are kept. Anything else
  // (another model type, another normaliser, dropout) is a stag::Error naming the field.
  static HfTokenizer from_tokenizer_json(const std::filesystem::path& path);
  // A model folder: its tokenizer.json, else its vocab.json and merges.txt.
  static HfTokenizer load(const std::filesystem::path& folder);

  // Ids of `text` (any bytes; invalid UTF-8 is kept as bytes and comes back on decode). With
  // `split_added` false, added tokens in the text are encoded as ordinary text.
  std::vector<std::int32_t> encode(std::string_view text, bool split_added = true) const;
  // The bytes of `ids`; added special tokens are left out when `skip_special`. An id outside
  // the vocabulary is a stag::Error.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special = false) const;

  // One past the largest id (the embedding table needs at least this many rows).
  std::size_t vocab_size() const { return tokens_.size(); }
  // The token's text as the vocabulary spells it ("Ġthe": byte-to-unicode characters).
  const std::string& token(std::int32_t id) const;
  std::optional<std::int32_t> find(std::string_view token) const;
  const std::vector<AddedToken>& added_tokens() const { return added_; }
  std::string_view pattern() const { return pattern_; }  // empty for SentencePiece-style BPE
  bool sentencepiece() const { return metaspace_; }
  std::size_t num_merges() const { return merges_.size(); }

  // Writes the tokeniser back as Hugging Face's files: vocab.json + merges.txt, or a
  // tokenizer.json that transformers and tokenizers read.
  void save_gpt2_files(const std::filesystem::path& folder) const;
  void save_tokenizer_json(const std::filesystem::path& path) const;

  HfTokenizer(HfTokenizer&&) noexcept;
  HfTokenizer& operator=(HfTokenizer&&) noexcept;
  ~HfTokenizer();

 private:
  HfTokenizer();
  struct Regex;  // the compiled pre-tokeniser (PCRE2)
  void finish(std::string_view what);
  void encode_piece(std::string_view text, std::vector<std::int32_t>& out) const;
  void encode_chunk(std::string_view chunk, std::vector<std::int32_t>& out) const;
  void encode_metaspace(std::string_view text, std::vector<std::int32_t>& out) const;
  void merge(std::vector<std::int32_t>& ids, std::vector<std::int32_t>& out) const;

  std::vector<std::string> tokens_;  // by id ("" for an id the vocabulary skips)
  std::unordered_map<std::string, std::int32_t> ids_;
  std::vector<std::pair<std::int32_t, std::int32_t>> merges_;  // by rank
  std::unordered_map<std::uint64_t, std::pair<std::int32_t, std::int32_t>>
      rank_;                            // pair -> rank, id
  std::int32_t byte_ids_[256] = {};     // each byte's character (SentencePiece: "<0xXX>")
  std::vector<AddedToken> added_;       // longest first
  std::vector<std::int32_t> added_at_;  // by id: its index in added_, or -1
  std::string pattern_;
  bool add_prefix_space_ = false;
  bool ignore_merges_ = false;  // Llama 3: a chunk that is a token is not merged
  // SentencePiece-style BPE (Llama 2): "▁" for spaces and before each piece, no regex.
  bool metaspace_ = false;
  bool byte_fallback_ = false;  // characters that are no token become "<0xXX>" tokens
  bool fuse_unk_ = false;       // else unk_id_, once for a run of them when fused
  std::int32_t unk_id_ = -1;
  std::string post_processor_;  // the tokenizer.json's, as JSON text (written back)
  std::unique_ptr<Regex> regex_;
};

}  // namespace stag::data

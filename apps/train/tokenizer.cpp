// TextTokenizer: one of the two data tokenisers behind one interface, with its JSON form.
#include <algorithm>
#include <unordered_map>

#include <stag/models/data/text.hpp>

#include <stag/ops/kernel.hpp>

#include "bow.hpp"
#include "tokenizer.hpp"

namespace stag::train_app {

std::vector<std::int32_t> WordVocab::encode(std::string_view text,
                                            data::EncodeOptions options) const {
  std::vector<std::int32_t> out;
  if (options.add_bos) out.push_back(data::kBosId);
  for (const std::string& w : bow_words(text)) {
    const auto it = ids.find(w);
    out.push_back(it == ids.end() ? data::kUnkId : it->second);
  }
  if (options.add_eos) out.push_back(data::kEosId);
  return out;
}

std::string WordVocab::decode(std::span<const std::int32_t> id_list) const {
  std::string out;
  for (std::int32_t id : id_list) {
    if (id < data::kNumSpecial) continue;
    if (static_cast<std::size_t>(id) >= vocab_size())
      throw Error("stag-train: word id " + std::to_string(id) + " out of range");
    out += (out.empty() ? "" : " ") + words[static_cast<std::size_t>(id - data::kNumSpecial)];
  }
  return out;
}

std::string WordVocab::to_json() const {
  return nlohmann::json{{"type", "words"}, {"words", words}}.dump();
}

namespace {

WordVocab word_vocab(std::vector<std::string> words) {
  WordVocab v;
  v.words = std::move(words);
  for (std::size_t i = 0; i < v.words.size(); ++i)
    if (!v.ids.emplace(v.words[i], static_cast<std::int32_t>(data::kNumSpecial + i)).second)
      throw Error("stag-train: the word list repeats '" + v.words[i] + "'");
  return v;
}

WordVocab learn_words(std::span<const std::string> texts, std::size_t max_vocab) {
  std::unordered_map<std::string, std::size_t> counts;
  for (const std::string& t : texts)
    for (const std::string& w : bow_words(t)) ++counts[w];
  std::vector<std::pair<std::string, std::size_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;  // deterministic
  });
  std::vector<std::string> words;
  for (const auto& [w, c] : sorted)
    if (words.size() + data::kNumSpecial < max_vocab) words.push_back(w);
  return word_vocab(std::move(words));
}

}  // namespace

TextTokenizer TextTokenizer::learn(const std::string& kind, std::span<const std::string> texts,
                                   std::size_t max_vocab, std::size_t bpe_vocab) {
  TextTokenizer t;
  t.kind_ = kind;
  if (kind == "char")
    t.tok_ = data::CharTokenizer::build(texts, 1, max_vocab);
  else if (kind == "bpe") {
    if (bpe_vocab > max_vocab)
      throw Error("stag-train: --bpe-vocab " + std::to_string(bpe_vocab) + " is above the " +
                  std::to_string(max_vocab) +
                  " ids of the preset's vocabulary; give at most that (or a preset with a larger "
                  "vocabulary, see --list-models)");
    t.tok_ = data::BpeTokenizer::train(texts, bpe_vocab);
  } else if (kind == "word")
    t.tok_ = learn_words(texts, max_vocab);
  else
    throw Error("stag-train: unknown tokenizer '" + kind + "' (char, bpe or word)");
  t.index_chars();
  return t;
}

TextTokenizer TextTokenizer::from_json(const nlohmann::json& j) {
  TextTokenizer t;
  // NOTE: each field's JSON type is checked first: nlohmann's at() and get<> would throw its
  // own exceptions, which name no field.
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string())
    throw Error(
        "stag-train: the checkpoint's tokenizer has no \"kind\" string (char, bpe or word)");
  if (!j.contains("tokenizer") || !j["tokenizer"].is_object())
    throw Error("stag-train: the checkpoint's tokenizer has no \"tokenizer\" object");
  t.kind_ = j["kind"].get<std::string>();
  const std::string body = j["tokenizer"].dump();
  if (t.kind_ == "char")
    t.tok_ = data::CharTokenizer::from_json(body);
  else if (t.kind_ == "bpe")
    t.tok_ = data::BpeTokenizer::from_json(body);
  else if (t.kind_ == "word") {
    const nlohmann::json& words = j["tokenizer"].value("words", nlohmann::json());
    if (!words.is_array() ||
        !std::all_of(words.begin(), words.end(), [](const auto& w) { return w.is_string(); }))
      throw Error("stag-train: the checkpoint's word tokenizer has no \"words\" list of strings");
    t.tok_ = word_vocab(words.get<std::vector<std::string>>());
  } else
    throw Error("stag-train: the checkpoint's tokenizer kind '" + t.kind_ +
                "' is not char, bpe or word");
  t.index_chars();
  return t;
}

nlohmann::json TextTokenizer::to_json() const {
  const std::string body = std::visit([](const auto& tok) { return tok.to_json(); }, tok_);
  return {{"kind", kind_}, {"tokenizer", nlohmann::json::parse(body)}};
}

std::vector<std::int32_t> TextTokenizer::encode(std::string_view text,
                                                data::EncodeOptions options) const {
  return std::visit([&](const auto& tok) { return tok.encode(text, options); }, tok_);
}

std::string TextTokenizer::decode(std::span<const std::int32_t> ids) const {
  return std::visit([&](const auto& tok) { return tok.decode(ids); }, tok_);
}

std::size_t TextTokenizer::vocab_size() const {
  return std::visit([](const auto& tok) { return tok.vocab_size(); }, tok_);
}

double TextTokenizer::chars_of(std::int32_t id) const {
  return id >= 0 && static_cast<std::size_t>(id) < chars_.size()
             ? chars_[static_cast<std::size_t>(id)]
             : 0.0;
}

void TextTokenizer::index_chars() {
  chars_.assign(vocab_size(), 0.0);
  chars_[static_cast<std::size_t>(data::kEosId)] = 1;
  if (kind_ == "char") chars_[static_cast<std::size_t>(data::kUnkId)] = 1;  // an unknown character
  for (std::size_t id = data::kNumSpecial; id < chars_.size(); ++id) {
    if (const auto* wv = std::get_if<WordVocab>(&tok_)) {
      chars_[id] =
          static_cast<double>(data::decode_utf8(wv->words[id - data::kNumSpecial]).size()) +
          1;  // and a space
    } else if (const auto* bpe = std::get_if<data::BpeTokenizer>(&tok_)) {
      // UTF-8 lead bytes: a character split across tokens counts once, in its first token.
      double n = 0;
      for (unsigned char c : bpe->token_bytes(static_cast<std::int32_t>(id)))
        n += (c & 0xC0) != 0x80;
      chars_[id] = n;
    } else {
      chars_[id] = 1;
    }
  }
}

}  // namespace stag::train_app

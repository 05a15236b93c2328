// Implementation of CharTokenizer (see char_tokenizer.hpp). JSON layout:
// {"type": "char", "version": 1, "special": ["<pad>", ...], "chars": ["a", "b", ...]}.
#include <stag/models/data/char_tokenizer.hpp>

#include <algorithm>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/data/tokenizer_json.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {

CharTokenizer CharTokenizer::build(std::span<const std::string> texts, std::size_t min_count,
                                   std::size_t max_vocab) {
  std::unordered_map<char32_t, std::size_t> counts;
  for (const std::string& t : texts)
    for (char32_t c : decode_utf8(t)) ++counts[c];
  std::vector<std::pair<char32_t, std::size_t>> ranked;
  for (const auto& [c, n] : counts)
    if (n >= std::max<std::size_t>(min_count, 1)) ranked.emplace_back(c, n);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (max_vocab != 0) {
    if (max_vocab <= static_cast<std::size_t>(kNumSpecial))
      throw Error("stag::data: CharTokenizer: max_vocab " + std::to_string(max_vocab) +
                  " leaves no room beyond the " + std::to_string(kNumSpecial) + " special tokens");
    ranked.resize(std::min(ranked.size(), max_vocab - kNumSpecial));
  }
  CharTokenizer tok;
  for (const auto& [c, n] : ranked) tok.chars_.push_back(c);
  tok.index();
  return tok;
}

void CharTokenizer::index() {
  ids_.clear();
  for (std::size_t i = 0; i < chars_.size(); ++i)
    ids_.emplace(chars_[i], static_cast<std::int32_t>(kNumSpecial + i));
}

std::int32_t CharTokenizer::id_of(char32_t c) const {
  const auto it = ids_.find(c);
  return it == ids_.end() ? kUnkId : it->second;
}

char32_t CharTokenizer::char_of(std::int32_t id) const {
  if (id < kNumSpecial || static_cast<std::size_t>(id) >= vocab_size())
    throw Error("stag::data: CharTokenizer: id " + std::to_string(id) +
                " is not a character id (characters are " + std::to_string(kNumSpecial) + ".." +
                std::to_string(vocab_size() - 1) + ")");
  return chars_[static_cast<std::size_t>(id - kNumSpecial)];
}

std::vector<std::int32_t> CharTokenizer::encode(std::string_view text,
                                                EncodeOptions options) const {
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() + 2);
  if (options.add_bos) ids.push_back(kBosId);
  for (char32_t c : decode_utf8(text)) ids.push_back(id_of(c));
  if (options.add_eos) ids.push_back(kEosId);
  return ids;
}

std::string CharTokenizer::decode(std::span<const std::int32_t> ids, bool keep_special) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
      throw Error("stag::data: CharTokenizer::decode: id " + std::to_string(id) + " at position " +
                  std::to_string(i) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
    if (id < kNumSpecial) {
      if (keep_special) out.append(kSpecialTokens[id]);
      continue;
    }
    append_utf8(out, chars_[static_cast<std::size_t>(id - kNumSpecial)]);
  }
  return out;
}

std::string CharTokenizer::to_json() const {
  nlohmann::json j;
  j["type"] = "char";
  j["version"] = 1;
  j["special"] = std::vector<std::string>(std::begin(kSpecialTokens), std::end(kSpecialTokens));
  std::vector<std::string> chars;
  for (char32_t c : chars_) chars.push_back(encode_utf8(std::u32string(1, c)));
  j["chars"] = chars;
  return j.dump(1);
}

CharTokenizer CharTokenizer::from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag::data: CharTokenizer: invalid JSON: ") + e.what());
  }
  if (!j.is_object())
    throw Error("stag::data: CharTokenizer: not a character tokeniser (the JSON is not an object)");
  detail::check_tokenizer_header(j, "CharTokenizer", "character tokeniser", "char");
  try {
    if (!j.contains("chars") || !j["chars"].is_array())
      throw Error("stag::data: CharTokenizer: missing \"chars\" array");
    CharTokenizer tok;
    for (std::size_t i = 0; i < j["chars"].size(); ++i) {
      const nlohmann::json& c = j["chars"][i];
      const std::u32string cps =
          c.is_string() ? decode_utf8(c.get<std::string>()) : std::u32string{};
      if (cps.size() != 1 || !is_valid_utf8(c.get<std::string>()))
        throw Error("stag::data: CharTokenizer: chars[" + std::to_string(i) +
                    "] is not one UTF-8 character");
      if (tok.chars_.find(cps[0]) != std::u32string::npos)
        throw Error("stag::data: CharTokenizer: chars[" + std::to_string(i) +
                    "] repeats an earlier character");
      tok.chars_.push_back(cps[0]);
    }
    tok.index();
    return tok;
  } catch (const nlohmann::json::exception& e) {  // a backstop: the checks should catch all
    throw Error(std::string("stag::data: CharTokenizer: ") + e.what());
  }
}

void CharTokenizer::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary);
  out << to_json();
  if (!out) throw Error("stag::data: CharTokenizer: cannot write " + path.string());
}

CharTokenizer CharTokenizer::load(const std::filesystem::path& path) {
  try {
    return from_json(read_file(path, "character tokeniser", ""));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + path.string() + ")");
  }
}

}  // namespace stag::data

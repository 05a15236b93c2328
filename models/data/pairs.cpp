// The tab-separated pair reader (see pairs.hpp): whole-file read, line by line, every failure a
// stag::Error with "file:line".
#include <algorithm>
#include <cstring>

#include <stag/models/data/pairs.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {

TextPairs load_tsv_pairs(const std::filesystem::path& path, const TsvOptions& o) {
  if (o.source_column == o.target_column)
    throw Error("stag::data: load_tsv_pairs: source and target column are both " +
                std::to_string(o.source_column));
  const std::string bytes = read_file(path, "the text-pair file", "");
  std::string_view rest(bytes);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);  // a UTF-8 byte-order mark
  TextPairs out;
  const std::size_t need = std::max(o.source_column, o.target_column) + 1;
  std::size_t line_no = 0;
  while (!rest.empty() && (o.limit == 0 || out.src.size() < o.limit)) {
    ++line_no;
    const std::size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto where = [&] { return path.string() + ":" + std::to_string(line_no) + ": "; };
    if (trim(line).empty() || (o.skip_comments && line.front() == '#')) {
      ++out.skipped;
      continue;
    }
    if (!is_valid_utf8(line)) throw Error("stag::data: " + where() + "the line is not valid UTF-8");
    std::vector<std::string_view> fields;
    for (std::size_t start = 0;;) {
      const std::size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab == std::string_view::npos ? tab : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    if (fields.size() < need)
      throw Error("stag::data: " + where() + "expected at least " + std::to_string(need) +
                  " tab-separated fields (source<TAB>target), found " +
                  std::to_string(fields.size()));
    const std::string_view src = trim(fields[o.source_column]), tgt = trim(fields[o.target_column]);
    if (!o.allow_empty && (src.empty() || tgt.empty()))
      throw Error("stag::data: " + where() + "the " + (src.empty() ? "source" : "target") +
                  " field is empty (TsvOptions::allow_empty accepts that)");
    out.src.emplace_back(src);
    out.tgt.emplace_back(tgt);
  }
  if (out.src.empty())
    throw Error("stag::data: " + path.string() + ": no source<TAB>target pair in the file");
  return out;
}

namespace {

// The number of code points of valid UTF-8.
std::size_t utf8_chars(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// One compiled catalogue (the GNU .mo format: a header of 32-bit words, then two tables of
// (length, offset) pairs, one for the originals and one for the translations, in the byte
// order the magic number says). Returns false when the charset is not UTF-8.
bool read_mo(const std::filesystem::path& path, const GettextOptions& o, GettextPairs& out) {
  const std::string bytes = read_file(path, "the gettext catalogue", "");
  const auto fail = [&](const std::string& what) -> Error {
    return Error("stag::data: " + path.string() + ": " + what);
  };
  if (bytes.size() < 28)
    throw fail("too short for a .mo catalogue (" + std::to_string(bytes.size()) + " bytes)");
  const auto word_at = [&](std::size_t at, bool swap) -> std::uint32_t {
    std::uint32_t w;
    std::memcpy(&w, bytes.data() + at, 4);
    return swap ? __builtin_bswap32(w) : w;
  };
  bool swap = false;
  if (word_at(0, false) != 0x950412deu) {
    if (word_at(0, true) != 0x950412deu) throw fail("not a .mo catalogue (bad magic number)");
    swap = true;
  }
  const auto word = [&](std::size_t at) { return word_at(at, swap); };
  if ((word(4) >> 16) > 1) throw fail("unknown .mo revision " + std::to_string(word(4)));
  const std::uint64_t n = word(8), originals = word(12), translations = word(16);
  for (const std::uint64_t table : {originals, translations})
    if (table + n * 8 > bytes.size()) throw fail("its string table runs past the end (truncated?)");
  const auto string_at = [&](std::uint64_t table, std::uint64_t i) {
    const std::uint64_t len = word(static_cast<std::size_t>(table + i * 8));
    const std::uint64_t off = word(static_cast<std::size_t>(table + i * 8 + 4));
    if (off + len > bytes.size())
      throw fail("entry " + std::to_string(i) + " runs past the end (truncated?)");
    return std::string_view(bytes).substr(static_cast<std::size_t>(off),
                                          static_cast<std::size_t>(len));
  };
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t skipped = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::string_view src = string_at(originals, i), tgt = string_at(translations, i);
    if (src.empty()) {  // the header: "Content-Type: text/plain; charset=..."
      std::string header(tgt);
      std::transform(header.begin(), header.end(), header.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      });
      const std::size_t at = header.find("charset=");
      if (at != std::string::npos) {
        const std::string_view cs =
            trim(std::string_view(header).substr(at + 8, header.find('\n', at) - at - 8));
        if (cs != "utf-8" && cs != "utf8" && cs != "ascii" && cs != "us-ascii") return false;
      }
      ++skipped;
      continue;
    }
    if (const std::size_t ctx = src.find('\x04'); ctx != std::string_view::npos)
      src.remove_prefix(ctx + 1);
    src = src.substr(0, src.find('\0'));  // plural forms: the singular
    tgt = tgt.substr(0, tgt.find('\0'));
    if (!is_valid_utf8(src) || !is_valid_utf8(tgt))
      throw fail("entry " + std::to_string(i) + " is not valid UTF-8");
    src = trim(src);
    tgt = trim(tgt);
    const bool multi = src.find_first_of("\n\t\r") != std::string_view::npos ||
                       tgt.find_first_of("\n\t\r") != std::string_view::npos;
    if (src.empty() || tgt.empty() || (o.single_line && multi) ||
        (o.max_chars > 0 && (utf8_chars(src) > o.max_chars || utf8_chars(tgt) > o.max_chars))) {
      ++skipped;
      continue;
    }
    pairs.emplace_back(src, tgt);
  }
  for (auto& [src, tgt] : pairs) {
    if (o.limit > 0 && out.src.size() >= o.limit) break;
    out.src.push_back(std::move(src));
    out.tgt.push_back(std::move(tgt));
  }
  out.skipped += skipped;
  return true;
}

}  // namespace

GettextPairs load_gettext_pairs(const std::filesystem::path& path, const GettextOptions& o) {
  GettextPairs out;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      if (e.path().extension() == ".mo" && e.is_regular_file(ec)) files.push_back(e.path());
    if (ec) throw Error("stag::data: cannot list " + path.string() + ": " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw Error("stag::data: " + path.string() + " holds no .mo catalogue");
    for (const auto& f : files) {
      if (o.limit > 0 && out.src.size() >= o.limit) break;
      if (read_mo(f, o, out))
        ++out.catalogues;
      else
        ++out.catalogues_skipped;
    }
  } else {
    if (!read_mo(path, o, out))
      throw Error("stag::data: " + path.string() + ": the catalogue's charset is not UTF-8");
    out.catalogues = 1;
  }
  if (out.src.empty())
    throw Error("stag::data: " + path.string() + ": no translated message in " +
                std::to_string(out.catalogues) + " catalogue(s)");
  return out;
}

}  // namespace stag::data

// The tab-separated pair reader (see pairs.hpp): whole-file read, line by line, every failure a
// stag::Error with "file:line".
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

}  // namespace stag::data

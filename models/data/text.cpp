// Implementation of the shared text helpers (see text.hpp).
#include <stag/models/data/text.hpp>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <stag/ops/kernel.hpp>

namespace stag::data {
namespace {

// Length of the well-formed sequence starting at s[i], or 0 when it is not well formed.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i, char32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  char32_t min = 0;
  if ((c & 0xE0) == 0xC0)
    n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0)
    n = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  return n;
}

}  // namespace

std::u32string decode_utf8(std::string_view bytes) {
  std::u32string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence_length(bytes, i, cp);
    out.push_back(n == 0 ? kReplacement : cp);
    i += n == 0 ? 1 : n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacement;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::string to_valid_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes)) return std::string(bytes);
  return encode_utf8(decode_utf8(bytes));
}

bool is_valid_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_sequence_length(bytes, i, cp);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string strip_ansi(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b' && i + 1 < text.size() && text[i + 1] == '[') {
      // A CSI sequence: parameters and intermediates, then one final byte in 0x40..0x7E.
      std::size_t j = i + 2;
      while (j < text.size() && !(text[j] >= 0x40 && text[j] <= 0x7E)) ++j;
      i = j;  // skips the final byte too (the loop's ++i)
      continue;
    }
    if (text[i] == '\x1b') continue;  // a stray ESC (some fortunes have them) is dropped alone
    out.push_back(text[i]);
  }
  return out;
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string normalize_key(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : trim(text)) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = true;
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  return out;
}

std::string read_file(const std::filesystem::path& path, std::string_view what,
                      std::string_view missing_hint) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error("stag::data: " + std::string(what) + ": file not found: " + path.string() +
                std::string(missing_hint));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("stag::data: " + std::string(what) + ": cannot open " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text_atomic(const std::filesystem::path& path, const std::string& text,
                       std::string_view who) {
  const std::string where = std::string(who) + path.string() + ": ";
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f.is_open())
      throw Error(where + "cannot write (cannot create the temporary file " + tmp.string() + ")");
    f << text;
    f.flush();
    if (!f) {
      f.close();
      std::filesystem::remove(tmp, ec);
      throw Error(where +
                  "cannot write (disk full or no permission?); the previous file is "
                  "unchanged");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(where + "cannot rename the temporary file into place: " + ec.message());
  }
}

std::filesystem::path npm_data_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("STAG_DATA_DIR"); env && *env) {
    const fs::path p = fs::path(env) / "npm";
    if (!fs::is_directory(p, ec))
      throw Error("stag::data: STAG_DATA_DIR=" + std::string(env) +
                  " has no npm/ folder (run tools/data.sh)");
    return p;
  }
  fs::path dir = fs::current_path(ec);
  for (int up = 0; up < 8 && !dir.empty(); ++up) {
    if (fs::is_directory(dir / "data" / "npm", ec)) return dir / "data" / "npm";
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  throw Error("stag::data: no data/npm folder in " + fs::current_path(ec).string() +
              " or its parents, and STAG_DATA_DIR is not set (run tools/data.sh)");
}

std::filesystem::path fortunes_dir() {
  if (const char* env = std::getenv("STAG_FORTUNES_DIR"); env && *env) return env;
  return "/usr/share/games/fortunes";
}

std::filesystem::path python_doc_dir() {
  if (const char* env = std::getenv("STAG_PYDOC_DIR"); env && *env) return env;
  return "/usr/share/doc/python3.11/html/_sources";
}

std::string at_line(const std::filesystem::path& path, std::size_t line, std::string_view message) {
  return "stag::data: " + path.string() + ":" + std::to_string(line) + ": " + std::string(message);
}

}  // namespace stag::data

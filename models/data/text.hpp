// Text helpers shared by the loaders and tokenisers: UTF-8 decoding with U+FFFD replacement,
// whole-file reads with errors that say how to get the data, and where the data sets live.
// Add a helper here only when two loaders need it; format-specific parsing stays in its loader.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace stag::data {

inline constexpr char32_t kReplacement = 0xFFFD;

// Decodes UTF-8 into code points. Each byte that does not start a well-formed sequence
// (stray continuation bytes, overlong forms, surrogates, values above U+10FFFF, truncated
// sequences) becomes one U+FFFD, so decoding never fails and never skips input.
std::u32string decode_utf8(std::string_view bytes);
// Appends the UTF-8 form of `cp` (U+FFFD for surrogates and values above U+10FFFF).
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view cps);
// `bytes` with every invalid byte replaced by U+FFFD (valid input comes back unchanged).
std::string to_valid_utf8(std::string_view bytes);
bool is_valid_utf8(std::string_view bytes);

// Removes ANSI/VT100 escape sequences (colour codes such as "\x1b[33m", "\x1b[;m") and any
// other ESC byte.
std::string strip_ansi(std::string_view text);
// Trims ASCII whitespace at both ends.
std::string_view trim(std::string_view s);
// The key under which two texts count as the same for splitting: ASCII letters lowered,
// runs of whitespace collapsed to one space, ends trimmed.
std::string normalize_key(std::string_view text);

// The whole file as bytes. A missing file throws stag::Error naming `what` (the data set) and
// the path, then `missing_hint` (for a user's own file: "").
std::string read_file(
    const std::filesystem::path& path, std::string_view what,
    std::string_view missing_hint = " (run tools/data.sh to install the data sets)");

// Writes `text` to `path` through `<path>.tmp.<pid>` renamed into place: a write that fails (a
// full disk) leaves the previous file as it was, never a truncated one. The stag::Error starts
// with `who` ("stag::hf: ") and names the file. No fsync: a power cut may lose the new file.
void write_text_atomic(const std::filesystem::path& path, const std::string& text,
                       std::string_view who);

// Where the npm data sets were unpacked: $STAG_DATA_DIR/npm if set, else the first `data/npm`
// found in the current directory or its ancestors (so tests run from build/ find the repo's).
// Throws stag::Error with the tools/data.sh hint when none exists.
std::filesystem::path npm_data_dir();
// Debian's fortune files: $STAG_FORTUNES_DIR or /usr/share/games/fortunes.
std::filesystem::path fortunes_dir();
// The reST sources of the Python 3.11 docs: $STAG_PYDOC_DIR or Debian's python3.11-doc path.
std::filesystem::path python_doc_dir();

// The text of a "file:line: message" error (lines counted from 1).
std::string at_line(const std::filesystem::path& path, std::size_t line, std::string_view message);

}  // namespace stag::data

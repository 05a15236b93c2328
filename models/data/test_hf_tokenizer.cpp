// Tests for HfTokenizer on small hand-made vocabularies: the merge order (rank first, then
// left to right), added tokens, the byte-to-unicode mapping, saving and reading back in both of
// Hugging Face's layouts, and a clear error for each malformed file. The real vocabularies are
// checked against outside reference encoders by tests/tokenizers/check_reference.sh.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
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

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

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

TEST_CASE("HfTokenizer's files are replaced whole or not at all", "[data][hf_tokenizer]") {
  TempDir d;
  const HfTokenizer a = toy(d);
  const fs::path out = d.path / "out";
  fs::create_directories(out);
  a.save_gpt2_files(out);
  const std::string before = slurp(out / "vocab.json");
  // Saving again over the files leaves no temporary beside them.
  a.save_gpt2_files(out);
  a.save_tokenizer_json(out / "tokenizer.json");
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(out)) ++files;
  CHECK(files == 3);
  CHECK(slurp(out / "vocab.json") == before);
  // A write that fails (here the temporary file cannot be made: a folder holds its name; a full
  // disk fails the same way, later) is an error naming the file, and the old file is unchanged.
  fs::create_directories(out / ("merges.txt.tmp." + std::to_string(getpid())));
  const std::string merges = slurp(out / "merges.txt");
  CHECK_THROWS_WITH(a.save_gpt2_files(out), Catch::Contains("merges.txt: cannot write"));
  CHECK(slurp(out / "merges.txt") == merges);
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
  CHECK_THROWS_WITH(refused(j), Catch::Contains("normalizer is {\"type\":\"NFC\"}"));
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

namespace {

// Llama 2's layout, small: <unk> <s> </s> (0-2), the 256 byte tokens "<0x00>".."<0xFF>"
// (3-258), then "▁" 259, "h" 260, "e" 261, "l" 262, "o" 263, "▁h" 264, "ll" 265, "▁he" 266,
// "▁hell" 267, "é" 268. Merges best first: ▁ h, l l, ▁h e, ▁he ll.
const std::string kMeta = "\u2581";
nlohmann::json sentencepiece_json() {
  nlohmann::json v = nlohmann::json::object();
  v["<unk>"] = 0;
  v["<s>"] = 1;
  v["</s>"] = 2;
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    v[hex] = 3 + b;
  }
  int id = 259;
  for (const std::string& t :
       {kMeta, std::string("h"), std::string("e"), std::string("l"), std::string("o"), kMeta + "h",
        std::string("ll"), kMeta + "he", kMeta + "hell", std::string("\u00e9")})
    v[t] = id++;
  const auto special = [](int i, const char* c) {
    return nlohmann::json{{"id", i}, {"content", c}, {"special", true}, {"normalized", false}};
  };
  nlohmann::json norm = {{"type", "Sequence"}};
  norm["normalizers"] = nlohmann::json::array(
      {{{"type", "Prepend"}, {"prepend", kMeta}},
       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kMeta}}});
  nlohmann::json post = {{"type", "TemplateProcessing"}};
  post["single"] = nlohmann::json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                          {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  return {{"added_tokens", {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>")}},
          {"normalizer", norm},
          {"pre_tokenizer", nullptr},
          {"post_processor", post},
          {"decoder", {{"type", "Sequence"}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"vocab", v},
            {"merges", {kMeta + " h", "l l", kMeta + "h e", kMeta + "he ll"}}}}};
}

}  // namespace

// The expected ids follow from the rules (docs in hf_tokenizer.hpp), worked out by hand; the real
// Llama 2 vocabulary is checked against llama-tokenizer-js by tests/tokenizers/check_reference.sh.
TEST_CASE("HfTokenizer reads Llama 2's SentencePiece-style BPE: \"▁\", byte fallback, unk",
          "[data][hf_tokenizer]") {
  TempDir d;
  const nlohmann::json j = sentencepiece_json();
  const HfTokenizer t = HfTokenizer::from_tokenizer_json(d.write("t.json", j.dump()));
  CHECK(t.sentencepiece());
  CHECK(t.pattern().empty());
  // "▁hello": ▁ h e l l o -> ▁h e l l o -> ▁h e ll o -> ▁he ll o -> ▁hell o.
  CHECK(t.encode("hello") == Ids{267, 263});
  // "é" is a token; "€" is not: its three UTF-8 bytes' tokens.
  CHECK(t.encode("h\u00e9\u20ac") == Ids{264, 268, 3 + 0xE2, 3 + 0x82, 3 + 0xAC});
  CHECK(t.encode("a b") == Ids{259, 3 + 'a', 259, 3 + 'b'});  // every space is "▁"
  CHECK(t.encode("").empty());                                // nothing before an empty text
  CHECK(t.encode("h<s>h") == Ids{264, 1, 264});  // each piece between added tokens gets "▁"
  CHECK(t.encode("h<s>h", /*split_added=*/false) == Ids{264, 3 + '<', 3 + 's', 3 + '>', 260});

  CHECK(t.decode(Ids{267, 263}) == "hello");  // the one leading space is dropped
  CHECK(t.decode(Ids{264, 268, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}) == "h\u00e9\u20ac");
  CHECK(t.decode(Ids{259, 3 + 0xE2, 3 + 0x82}) == "\uFFFD\uFFFD");  // bytes that are no UTF-8
  CHECK(t.decode(Ids{1, 264}) == "<s> h");
  CHECK(t.decode(Ids{1, 264}, /*skip_special=*/true) == "h");
  for (const std::string text : {"hello hello", "  two  spaces ", "h\u00e9 \u20ac\u4e2d\t\n"})
    CHECK(t.decode(t.encode(text)) == text);

  // The Metaspace pre-tokeniser that does not split is the same rule.
  nlohmann::json m = j;
  m["normalizer"] = nullptr;
  m["pre_tokenizer"] = {
      {"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "first"}, {"split", false}};
  const HfTokenizer meta = HfTokenizer::from_tokenizer_json(d.write("m.json", m.dump()));
  CHECK(meta.encode("hello he") == t.encode("hello he"));

  // Without byte fallback, characters that are no token are <unk>, one per run when fused.
  nlohmann::json u = j;
  u["model"]["byte_fallback"] = false;
  const HfTokenizer unk = HfTokenizer::from_tokenizer_json(d.write("u.json", u.dump()));
  CHECK(unk.encode("x\u20ac\u20ach") == Ids{259, 0, 260});
  u["model"]["fuse_unk"] = false;
  CHECK(HfTokenizer::from_tokenizer_json(d.write("u2.json", u.dump())).encode("xxh") ==
        Ids{259, 0, 0, 260});

  // Saved and read back: the same rule, and the <s> template kept.
  t.save_tokenizer_json(d.path / "saved.json");
  const HfTokenizer back = HfTokenizer::from_tokenizer_json(d.path / "saved.json");
  CHECK(back.sentencepiece());
  CHECK(back.encode("h\u00e9\u20ac hello<s>") == t.encode("h\u00e9\u20ac hello<s>"));
  const nlohmann::json saved = nlohmann::json::parse(std::ifstream(d.path / "saved.json"));
  CHECK(saved["post_processor"] == j["post_processor"]);
  CHECK(saved["model"]["byte_fallback"] == true);
  CHECK_THROWS_WITH(t.save_gpt2_files(d.path), Catch::Contains("save this one as tokenizer.json"));

  const auto refused = [&](const nlohmann::json& x) {
    return HfTokenizer::from_tokenizer_json(d.write("r.json", x.dump()));
  };
  nlohmann::json r = m;
  r["pre_tokenizer"]["split"] = true;
  CHECK_THROWS_WITH(refused(r), Catch::Contains("(read: Metaspace with replacement"));
  r = j;
  r["pre_tokenizer"] = {{"type", "Whitespace"}};
  CHECK_THROWS_WITH(refused(r), Catch::Contains("with no pre_tokenizer"));
  r = j;
  r["model"]["vocab"].erase("<0x41>");
  CHECK_THROWS_WITH(
      refused(r), Catch::Contains("model.byte_fallback is true but byte 65 has no token (<0x41>)"));
  r = j;
  r["model"]["byte_fallback"] = false;
  r["model"]["unk_token"] = nullptr;
  CHECK_THROWS_WITH(refused(r), Catch::Contains("neither byte_fallback nor an unk_token"));
  r = j;
  r["model"]["unk_token"] = "<nope>";
  CHECK_THROWS_WITH(refused(r),
                    Catch::Contains("model.unk_token \"<nope>\" is not in the vocabulary"));
}

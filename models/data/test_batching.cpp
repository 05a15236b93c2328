// Tests for seeded shuffles, leak-free splits, batch plans (bucketing) and the padded batches
// for classification, sequence to sequence and language modelling. Expected arrays are written
// out by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include <stag/models/data/batch.hpp>
#include <stag/models/data/split.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

using namespace stag::data;
using Ids = std::vector<std::int32_t>;
using Rows = std::vector<std::size_t>;

namespace {
std::vector<double> values(const stag::Array& a) {
  return a.to_doubles();
}
std::vector<double> as_doubles(std::initializer_list<double> v) {
  return v;
}
Rows sorted(Rows v) {
  std::sort(v.begin(), v.end());
  return v;
}
// NOTE: `numbered("k", i)` trips a false -Wrestrict in g++ 12 at -O2; append instead.
std::string numbered(const char* prefix, int i) {
  std::string s(prefix);
  s.append(std::to_string(i));
  return s;
}
Rows iota(std::size_t n) {
  Rows v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  return v;
}
}  // namespace

TEST_CASE("shuffled_indices is a permutation fixed by (seed, epoch)", "[data][split]") {
  const Rows a = shuffled_indices(50, 7);
  CHECK(sorted(a) == iota(50));
  CHECK(shuffled_indices(50, 7) == a);
  CHECK(shuffled_indices(50, 8) != a);
  CHECK(shuffled_indices(50, 7, 1) != a);
  CHECK(a != iota(50));
  CHECK(shuffled_indices(0, 1).empty());
}

TEST_CASE("split_by_key deals out distinct keys by fraction and never splits a key",
          "[data][split]") {
  std::vector<std::string> keys;
  for (int i = 0; i < 100; ++i) keys.push_back(numbered("k", i));
  for (int i = 0; i < 30; ++i) keys.push_back(numbered("k", i * 3));  // 30 repeats
  SplitOptions o;
  o.seed = 3;
  const SplitIndices s = split_by_key(keys, o);
  // 100 distinct keys: 80 / 10 / 10 keys; every item exactly once.
  Rows all = s.train;
  all.insert(all.end(), s.val.begin(), s.val.end());
  all.insert(all.end(), s.test.begin(), s.test.end());
  CHECK(sorted(all) == iota(keys.size()));
  std::set<std::string> train_keys, val_keys, test_keys;
  for (auto r : s.train) train_keys.insert(keys[r]);
  for (auto r : s.val) val_keys.insert(keys[r]);
  for (auto r : s.test) test_keys.insert(keys[r]);
  CHECK(train_keys.size() == 80);
  CHECK(val_keys.size() == 10);
  CHECK(test_keys.size() == 10);
  for (const auto& k : val_keys) CHECK((train_keys.count(k) == 0 && test_keys.count(k) == 0));
  for (const auto& k : test_keys) CHECK(train_keys.count(k) == 0);
  // Reproducible with the seed, different with another.
  const SplitIndices again = split_by_key(keys, o);
  CHECK((again.train == s.train && again.val == s.val && again.test == s.test));
  o.seed = 4;
  CHECK(split_by_key(keys, o).test != s.test);
  // Dropping duplicates keeps one item per key.
  o.drop_duplicates = true;
  const SplitIndices d = split_by_key(keys, o);
  CHECK(d.train.size() + d.val.size() + d.test.size() == 100);
  o.train = 0.9;
  CHECK_THROWS_WITH(split_by_key(keys, o), Catch::Contains("must be non-negative and sum to 1"));
}

TEST_CASE(
    "split_dataset keeps case/whitespace variants of a text, and a word's alternates, together",
    "[data][split]") {
  TextDataset ds{"t", {"no", "yes"}, {}};
  for (int i = 0; i < 200; ++i) ds.examples.push_back({numbered("text ", i), i % 2, "x"});
  ds.examples.push_back({"TEXT   7", 0, "x"});  // the same as "text 7" after normalisation
  const TextSplits s = split_dataset(ds, {});
  std::set<std::string> train;
  for (const auto& e : s.train.examples) train.insert(normalize_key(e.text));
  std::size_t in_train = 0;
  for (const auto& e : s.train.examples) in_train += normalize_key(e.text) == "text 7";
  for (const auto& part : {s.val, s.test})
    for (const auto& e : part.examples) CHECK(train.count(normalize_key(e.text)) == 0);
  CHECK((in_train == 0 || in_train == 2));
  CHECK(s.train.label_names == ds.label_names);
  CHECK(s.train.examples.size() + s.val.examples.size() + s.test.examples.size() == 201);

  G2pDataset g;
  for (int i = 0; i < 50; ++i) {
    g.examples.push_back({numbered("w", i), {"AH0"}});
    g.examples.push_back({numbered("w", i), {"EY1"}});  // an alternate pronunciation
  }
  g.phoneme_set = {"AH0", "EY1"};
  const G2pSplits gs = split_dataset(g, {});
  std::set<std::string> train_words;
  for (const auto& e : gs.train.examples) train_words.insert(e.word);
  for (const auto& e : gs.test.examples) CHECK(train_words.count(e.word) == 0);
  for (const auto& e : gs.val.examples) CHECK(train_words.count(e.word) == 0);
  CHECK(gs.train.examples.size() % 2 == 0);
  CHECK(gs.test.phoneme_set == g.phoneme_set);
}

TEST_CASE("pad_batch pads with 0, masks real tokens and truncates when asked", "[data][batch]") {
  const std::vector<Ids> seqs = {{5, 6, 7}, {8}, {}};
  const Rows rows = {0, 1, 2};
  PaddedIds p = pad_batch(seqs, rows);
  CHECK(p.ids.dtype() == stag::DType::i32);
  CHECK(p.keep.dtype() == stag::DType::boolean);
  CHECK(p.ids.dims() == std::vector<std::int64_t>{3, 3});
  CHECK(values(p.ids) == as_doubles({5, 6, 7, 8, 0, 0, 0, 0, 0}));
  CHECK(values(p.keep) == as_doubles({1, 1, 1, 1, 0, 0, 0, 0, 0}));
  CHECK(p.truncated == 0);
  const Rows two = {1, 2};
  p = pad_batch(seqs, two);
  CHECK(p.ids.dims() == std::vector<std::int64_t>{2, 1});
  CHECK(values(p.keep) == as_doubles({1, 0}));
  p = pad_batch(seqs, rows, {2, false});
  CHECK(values(p.ids) == as_doubles({5, 6, 8, 0, 0, 0}));
  CHECK(p.truncated == 1);
  p = pad_batch(seqs, two, {4, true});
  CHECK(p.ids.dims() == std::vector<std::int64_t>{2, 4});
  CHECK(values(p.ids) == as_doubles({8, 0, 0, 0, 0, 0, 0, 0}));
  const Rows empty, bad = {3};
  CHECK_THROWS_WITH(pad_batch(seqs, empty), Catch::Contains("at least one row"));
  CHECK_THROWS_WITH(pad_batch(seqs, bad),
                    Catch::Contains("row 3 is out of range (the data has 3 rows)"));
  CHECK_THROWS_WITH(pad_batch(seqs, rows, {0, true}),
                    Catch::Contains("pad_to_max needs max_len > 0"));
}

TEST_CASE("pad_batch pads on the left when asked; unpad_batch takes either back", "[data][batch]") {
  const std::vector<std::vector<std::int32_t>> seqs = {{4, 5, 6}, {7}, {8, 9}};
  const std::vector<std::size_t> rows = {0, 1, 2};
  const PaddedIds left = pad_batch(seqs, rows, {.multiple_of = 4, .left = true});
  REQUIRE(left.ids.dims() == std::vector<std::int64_t>{3, 4});
  CHECK(values(left.ids) == as_doubles({0, 4, 5, 6, 0, 0, 0, 7, 0, 0, 8, 9}));
  CHECK(values(left.keep) == as_doubles({0, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 1}));
  CHECK(unpad_batch(left.ids, left.keep) == seqs);
  const PaddedIds right = pad_batch(seqs, rows);
  CHECK(unpad_batch(right.ids, right.keep) == seqs);
  // A kept pad id is a token like any other: the mask decides, not the id.
  stag::Array keep(stag::DType::boolean, {1, 3});
  keep.data<bool>()[0] = keep.data<bool>()[2] = true;
  CHECK_THROWS_WITH(unpad_batch(stag::Array(stag::DType::i32, {1, 3}), keep),
                    Catch::Contains("row 0 has padding inside it, at position 1"));
  CHECK_THROWS_WITH(
      unpad_batch(stag::Array(stag::DType::i32, {2, 3}), stag::Array(stag::DType::boolean, {2, 3})),
      Catch::Contains("row 0 has no token"));
  CHECK_THROWS_WITH(unpad_batch(stag::Array(stag::DType::i32, {2, 3}), keep),
                    Catch::Contains("expected ids [B, S] i32 and keep [B, S] bool"));
}

TEST_CASE("pad_batch rounds the length up to a multiple, capped at max_len", "[data][batch]") {
  const std::vector<Ids> seqs = {{5, 6, 7}, {8}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  const Rows first_two = {0, 1}, all = {0, 1, 2};
  PaddedIds p = pad_batch(seqs, first_two, {.multiple_of = 4});
  CHECK(p.ids.dims() == std::vector<std::int64_t>{2, 4});
  CHECK(values(p.ids) == as_doubles({5, 6, 7, 0, 8, 0, 0, 0}));
  CHECK(values(p.keep) == as_doubles({1, 1, 1, 0, 1, 0, 0, 0}));
  // A length that is already a multiple stays.
  p = pad_batch(seqs, first_two, {.multiple_of = 3});
  CHECK(p.ids.dims() == std::vector<std::int64_t>{2, 3});
  // 9 rounds up to 12, then max_len 10 caps it (and nothing is cut).
  p = pad_batch(seqs, all, {.max_len = 10, .multiple_of = 4});
  CHECK(p.ids.dims() == std::vector<std::int64_t>{3, 10});
  CHECK(p.truncated == 0);
  // Only 4 distinct lengths over 1..16 with multiple_of 4.
  std::set<std::int64_t> lengths;
  for (std::size_t n = 1; n <= 16; ++n) {
    const std::vector<Ids> one = {Ids(n, 3)};
    lengths.insert(pad_batch(one, Rows{0}, {.multiple_of = 4}).ids.dim(1));
  }
  CHECK(lengths == std::set<std::int64_t>{4, 8, 12, 16});
  CHECK_THROWS_WITH(pad_batch(seqs, all, {.multiple_of = 0}),
                    Catch::Contains("multiple_of 0 must be at least 1"));
}

TEST_CASE("make_batches covers every row once; bucketing cuts padding; seeds fix the order",
          "[data][batch]") {
  std::vector<std::size_t> lengths(103);
  for (std::size_t i = 0; i < lengths.size(); ++i)
    lengths[i] = 1 + stag::random::bits(5, 0, 0, i) % 60;
  BatchingOptions o;
  o.batch_size = 10;
  o.shuffle = false;
  auto plan = make_batches(lengths, o);
  REQUIRE(plan.size() == 11);
  CHECK(plan[0] == iota(10));
  CHECK(plan[10] == Rows{100, 101, 102});
  o.drop_last = true;
  CHECK(make_batches(lengths, o).size() == 10);
  o.drop_last = false;
  const auto padded_cells = [&](const std::vector<Rows>& batches) {
    std::size_t cells = 0;
    for (const Rows& b : batches) {
      std::size_t longest = 0;
      for (auto r : b) longest = std::max(longest, lengths[r]);
      cells += longest * b.size();
    }
    return cells;
  };
  for (bool bucket : {false, true}) {
    o.shuffle = true;
    o.bucket = bucket;
    o.bucket_pool = 4;
    o.seed = 9;
    plan = make_batches(lengths, o, 2);
    Rows all;
    for (std::size_t k = 0; k < plan.size(); ++k) {
      CHECK(plan[k].size() == (k + 1 < plan.size() ? 10u : 3u));  // only the last batch is short
      all.insert(all.end(), plan[k].begin(), plan[k].end());
    }
    CHECK(sorted(all) == iota(lengths.size()));
    CHECK(make_batches(lengths, o, 2) == plan);
    CHECK(make_batches(lengths, o, 3) != plan);
  }
  o.bucket = false;
  o.bucket_pool = 20;
  const std::size_t plain = padded_cells(make_batches(lengths, o));
  o.bucket = true;
  const std::size_t bucketed = padded_cells(make_batches(lengths, o));
  INFO("padded cells: " << plain << " without bucketing, " << bucketed << " with");
  CHECK(bucketed < plain * 3 / 4);
  o.batch_size = 0;
  CHECK_THROWS_WITH(make_batches(lengths, o), Catch::Contains("batch_size must be positive"));
}

TEST_CASE("classification batches carry ids, keep and labels under the graph's input names",
          "[data][batch]") {
  const std::vector<std::string> texts = {"ab", "b"};
  const CharTokenizer tok = CharTokenizer::build(texts);  // b=4 (twice), a=5
  const TextDataset ds{"t", {"x", "y"}, {{"ab", 1, ""}, {"b", 0, ""}, {"bab", 1, ""}}};
  const EncodedTexts enc = encode_texts(tok, ds);
  CHECK(enc.ids == std::vector<Ids>{{5, 4}, {4}, {4, 5, 4}});
  CHECK(enc.lengths() == Rows{2, 1, 3});
  const Rows rows = {2, 1};
  const ClassBatch b = make_class_batch(enc, rows);
  CHECK(values(b.ids) == as_doubles({4, 5, 4, 4, 0, 0}));
  CHECK(values(b.keep) == as_doubles({1, 1, 1, 1, 0, 0}));
  CHECK(b.label.dims() == std::vector<std::int64_t>{2});
  CHECK(b.label.dtype() == stag::DType::i32);
  CHECK(values(b.label) == as_doubles({1, 0}));
  const stag::NamedArrays in = b.inputs();
  CHECK((in.count("ids") && in.count("keep") && in.count("label") && in.size() == 3));
}

TEST_CASE("seq2seq batches shift targets: <bos> y in, y <eos> out, one mask", "[data][batch]") {
  const SymbolVocab ph(std::vector<std::string>{"AH0", "K"});
  CHECK(ph.id_of("K") == 5);
  CHECK(ph.id_of("ZZ") == kUnkId);
  CHECK(ph.decode(std::vector<std::int32_t>{kBosId, 5, 4, kEosId}) ==
        std::vector<std::string>{"K", "AH0"});
  CHECK_THROWS_WITH(SymbolVocab(std::vector<std::string>{"A", "A"}),
                    Catch::Contains("\"A\" appears twice"));
  const std::vector<std::string> words = {"ka", "a"};
  const CharTokenizer letters = CharTokenizer::build(words);  // a=4, k=5
  G2pDataset g;
  g.examples = {{"ka", {"K", "AH0"}}, {"a", {"AH0"}}};
  const EncodedPairs enc = encode_g2p(letters, ph, g);
  CHECK(enc.src == std::vector<Ids>{{5, 4}, {4}});
  CHECK(enc.tgt == std::vector<Ids>{{5, 4}, {4}});
  CHECK(enc.lengths() == Rows{3, 2});
  const Rows rows = {0, 1};
  const Seq2SeqBatch b = make_seq2seq_batch(enc, rows);
  CHECK(values(b.src) == as_doubles({5, 4, 4, 0}));
  CHECK(values(b.src_keep) == as_doubles({1, 1, 1, 0}));
  CHECK(values(b.tgt_in) == as_doubles({kBosId, 5, 4, kBosId, 4, 0}));
  CHECK(values(b.tgt_out) ==
        as_doubles({5, 4, kEosId, 4, kEosId, kIgnoreLabel}));  // padding is ignored
  CHECK(values(b.tgt_keep) == as_doubles({1, 1, 1, 1, 1, 0}));
  CHECK(b.inputs().size() == 5);
}

TEST_CASE("LM windows read S + 1 tokens; targets are the next tokens", "[data][batch]") {
  const Corpus c{"c", {"ab", "b"}};
  const std::vector<std::string> texts = {"ab", "b"};
  const CharTokenizer tok = CharTokenizer::build(texts);  // b=4, a=5
  CHECK(encode_corpus(tok, c) == Ids{5, 4, kEosId, 4, kEosId});
  Ids stream(21);
  for (int i = 0; i < 21; ++i) stream[static_cast<std::size_t>(i)] = i;
  const auto plan = lm_window_batches(stream.size(), 4, 2, 1);
  REQUIRE(plan.size() == 2);  // 5 windows (starts 0, 4, .., 16), the fifth dropped
  Rows starts;
  for (const auto& b : plan) starts.insert(starts.end(), b.begin(), b.end());
  std::sort(starts.begin(), starts.end());
  const Rows all_starts = {0, 4, 8, 12, 16};
  CHECK(std::includes(all_starts.begin(), all_starts.end(), starts.begin(), starts.end()));
  CHECK(std::set<std::size_t>(starts.begin(), starts.end()).size() == 4);
  const Rows pick = {4, 16};
  const LmBatch b = make_lm_batch(stream, pick, 4);
  CHECK(values(b.ids) == as_doubles({4, 5, 6, 7, 16, 17, 18, 19}));
  CHECK(values(b.targets) == as_doubles({5, 6, 7, 8, 17, 18, 19, 20}));
  CHECK(values(b.keep) == std::vector<double>(8, 1.0));
  const Rows late = {17};
  CHECK_THROWS_WITH(make_lm_batch(stream, late, 4),
                    Catch::Contains("window at 17 needs 5 tokens but the stream has 21"));
}

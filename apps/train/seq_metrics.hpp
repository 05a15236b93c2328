// Metrics of sequence tasks, computed on the host: edit distance, phoneme and word error rates
// (G2P), and a character unigram model's bits per character (the LM's baseline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stag::train_app {

// Levenshtein distance (insertions, deletions and substitutions cost 1).
std::size_t edit_distance(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b);

struct ErrorRates {
  double per = 0;  // summed edit distance / summed reference length
  double wer = 0;  // share of words whose prediction is not exactly the reference
  std::size_t words = 0;
};
ErrorRates error_rates(const std::vector<std::vector<std::int32_t>>& predicted,
                       const std::vector<std::vector<std::int32_t>>& reference);

// Bits per character of an add-one-smoothed character unigram model fitted on `train` and
// scored on `eval`; each document also ends with one end-of-document symbol (as the LM's
// streams do), which counts as a character.
double unigram_bits_per_char(const std::vector<std::string>& train,
                             const std::vector<std::string>& eval);

}  // namespace stag::train_app

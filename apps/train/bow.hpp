// The bag-of-words baseline of `stag-train classify`: multinomial logistic regression on binary
// word-presence features (lower-cased words; CJK characters count as words), L2-regularised,
// fitted by full-batch Adam on the training split; the L2 strength is picked on validation.
// Plain C++ on the host, independent of stag's graphs, so it is a check as well as a baseline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stag::train_app {

// Lower-cased words: runs of ASCII letters, digits and apostrophes, or of non-ASCII letters;
// each CJK character (U+2E80 and above) is a word by itself.
std::vector<std::string> bow_words(std::string_view text);

struct BowResult {
  double l2 = 0;  // the chosen strength
  double train_accuracy = 0, val_accuracy = 0, test_accuracy = 0;
  std::size_t features = 0;
  double seconds = 0;
};

struct BowOptions {
  // Per example, on the mean loss; the best on validation is kept.
  std::vector<double> l2_grid = {1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2};
  bool verbose = false;  // a line per grid value on stderr
  int iterations = 300;
  double lr = 0.1;
  std::size_t min_count = 1;  // words seen fewer times in training are dropped
};

BowResult bow_baseline(const std::vector<std::string>& train_texts,
                       const std::vector<std::int32_t>& train_labels,
                       const std::vector<std::string>& val_texts,
                       const std::vector<std::int32_t>& val_labels,
                       const std::vector<std::string>& test_texts,
                       const std::vector<std::int32_t>& test_labels, int classes,
                       const BowOptions& options = {});

}  // namespace stag::train_app

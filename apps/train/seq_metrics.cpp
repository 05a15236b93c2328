// Edit distance with one row of the dynamic programme; the unigram model with add-one counts over
// the characters of both sides (plus one unseen symbol), so every evaluated character has mass.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

#include "seq_metrics.hpp"

namespace stag::train_app {

std::size_t edit_distance(const std::vector<std::int32_t>& a, const std::vector<std::int32_t>& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

ErrorRates error_rates(const std::vector<std::vector<std::int32_t>>& predicted,
                       const std::vector<std::vector<std::int32_t>>& reference) {
  if (predicted.size() != reference.size())
    throw Error("stag-train: error_rates: " + std::to_string(predicted.size()) +
                " predictions for " + std::to_string(reference.size()) + " references");
  double edits = 0, length = 0, wrong = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    edits += static_cast<double>(edit_distance(predicted[i], reference[i]));
    length += static_cast<double>(reference[i].size());
    wrong += predicted[i] != reference[i];
  }
  const double n = static_cast<double>(predicted.size());
  return {length > 0 ? edits / length : 0.0, n > 0 ? wrong / n : 0.0, predicted.size()};
}

double unigram_bits_per_char(const std::vector<std::string>& train,
                             const std::vector<std::string>& eval) {
  constexpr char32_t kEnd = 0x110000;  // the end-of-document symbol, outside Unicode
  std::unordered_map<char32_t, double> counts;
  double total = 0;
  for (const std::string& d : train) {
    for (char32_t c : data::decode_utf8(d)) ++counts[c], ++total;
    ++counts[kEnd], ++total;
  }
  std::unordered_map<char32_t, double> alphabet = counts;
  for (const std::string& d : eval)
    for (char32_t c : data::decode_utf8(d)) alphabet.emplace(c, 0.0);
  const double v = static_cast<double>(alphabet.size()) + 1;  // + one unseen symbol
  double bits = 0, chars = 0;
  auto score = [&](char32_t c) {
    const auto it = counts.find(c);
    bits -= std::log2(((it == counts.end() ? 0.0 : it->second) + 1) / (total + v));
    ++chars;
  };
  for (const std::string& d : eval) {
    for (char32_t c : data::decode_utf8(d)) score(c);
    score(kEnd);
  }
  return chars > 0 ? bits / chars : std::nan("");
}

}  // namespace stag::train_app

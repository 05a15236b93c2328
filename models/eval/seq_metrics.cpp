// Edit distance with one row of the dynamic programme; chrF from n-gram counts per order; the
// unigram model with add-one counts over the characters of both sides (plus one unseen symbol),
// so every evaluated character has mass.
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>

#include <stag/models/eval/seq_metrics.hpp>

namespace stag::eval {

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
    throw Error("stag::eval: error_rates: " + std::to_string(predicted.size()) +
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

ErrorRates error_rates_any(const std::vector<std::vector<std::int32_t>>& predicted,
                           const std::vector<std::vector<std::vector<std::int32_t>>>& references) {
  if (predicted.size() != references.size())
    throw Error("stag::eval: error_rates_any: " + std::to_string(predicted.size()) +
                " predictions for " + std::to_string(references.size()) + " reference lists");
  double edits = 0, length = 0, wrong = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const auto& refs = references[i];
    if (refs.empty())
      throw Error("stag::eval: error_rates_any: example " + std::to_string(i) +
                  " has no reference");
    std::size_t best = 0, best_edits = edit_distance(predicted[i], refs[0]);
    for (std::size_t k = 1; k < refs.size() && best_edits > 0; ++k)
      if (const std::size_t e = edit_distance(predicted[i], refs[k]); e < best_edits) {
        best = k;
        best_edits = e;
      }
    edits += static_cast<double>(best_edits);
    length += static_cast<double>(refs[best].size());
    wrong += best_edits > 0;
  }
  const double n = static_cast<double>(predicted.size());
  return {length > 0 ? edits / length : 0.0, n > 0 ? wrong / n : 0.0, predicted.size()};
}

namespace {

void check_same_count(std::size_t predicted, std::size_t reference, const char* what) {
  if (predicted != reference)
    throw Error(std::string("stag::eval: ") + what + ": " + std::to_string(predicted) +
                " predictions for " + std::to_string(reference) + " references");
}

std::vector<std::int32_t> code_points(const std::string& s) {
  std::vector<std::int32_t> out;
  for (char32_t c : data::decode_utf8(s)) out.push_back(static_cast<std::int32_t>(c));
  return out;
}

}  // namespace

double char_error_rate(const std::vector<std::string>& predicted,
                       const std::vector<std::string>& reference) {
  check_same_count(predicted.size(), reference.size(), "char_error_rate");
  double edits = 0, length = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const std::vector<std::int32_t> r = code_points(reference[i]);
    edits += static_cast<double>(edit_distance(code_points(predicted[i]), r));
    length += static_cast<double>(r.size());
  }
  return length > 0 ? edits / length : 0.0;
}

double chrf(const std::vector<std::string>& predicted, const std::vector<std::string>& reference,
            int max_order, double beta) {
  check_same_count(predicted.size(), reference.size(), "chrf");
  if (max_order < 1) throw Error("stag::eval: chrf: max_order must be at least 1");
  // Per order: matched n-grams, n-grams in the predictions, n-grams in the references.
  std::vector<double> match(static_cast<std::size_t>(max_order)), hyp(match), ref(match);
  auto no_space = [](const std::string& s) {
    std::vector<std::int32_t> out;
    for (std::int32_t c : code_points(s))
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') out.push_back(c);
    return out;
  };
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    const std::vector<std::int32_t> p = no_space(predicted[i]), r = no_space(reference[i]);
    for (int n = 1; n <= max_order; ++n) {
      const auto k = static_cast<std::size_t>(n);
      std::map<std::vector<std::int32_t>, double> pc, rc;
      for (std::size_t j = 0; j + k <= p.size(); ++j) ++pc[{p.begin() + j, p.begin() + j + k}];
      for (std::size_t j = 0; j + k <= r.size(); ++j) ++rc[{r.begin() + j, r.begin() + j + k}];
      for (const auto& [g, c] : pc) {
        hyp[k - 1] += c;
        const auto it = rc.find(g);
        if (it != rc.end()) match[k - 1] += std::min(c, it->second);
      }
      for (const auto& [g, c] : rc) ref[k - 1] += c;
    }
  }
  // Orders with no n-gram on either side are left out of the averages (as sacreBLEU does).
  double precision = 0, recall = 0;
  int orders = 0;
  for (std::size_t k = 0; k < match.size(); ++k) {
    if (hyp[k] == 0 && ref[k] == 0) continue;
    precision += hyp[k] > 0 ? match[k] / hyp[k] : 0.0;
    recall += ref[k] > 0 ? match[k] / ref[k] : 0.0;
    ++orders;
  }
  if (orders == 0) return 0.0;
  precision /= orders;
  recall /= orders;
  const double b2 = beta * beta;
  const double denom = b2 * precision + recall;
  return denom > 0 ? 100.0 * (1 + b2) * precision * recall / denom : 0.0;
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

}  // namespace stag::eval

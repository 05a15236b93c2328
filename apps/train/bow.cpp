// Bag-of-words logistic regression: sparse binary features, softmax over classes, full-batch
// Adam with L2; deterministic (fixed order, no randomness: the weights start at zero).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include <stag/models/data/text.hpp>

#include "bow.hpp"

namespace stag::train_app {
namespace {

using Doc = std::vector<std::int32_t>;  // distinct feature ids

struct Model {
  int classes = 2;
  std::size_t features = 0;
  std::vector<double> w;  // [features, classes]
  std::vector<double> b;  // [classes]

  void logits(const Doc& d, double* out) const {
    for (int c = 0; c < classes; ++c) out[c] = b[static_cast<std::size_t>(c)];
    for (std::int32_t f : d)
      for (int c = 0; c < classes; ++c) out[c] += w[static_cast<std::size_t>(f) * classes + c];
  }
  int predict(const Doc& d) const {
    std::vector<double> z(static_cast<std::size_t>(classes));
    logits(d, z.data());
    return static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin());
  }
};

double accuracy(const Model& m, const std::vector<Doc>& docs,
                const std::vector<std::int32_t>& labels) {
  if (docs.empty()) return std::nan("");
  double right = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) right += m.predict(docs[i]) == labels[i];
  return right / static_cast<double>(docs.size());
}

Model fit(const std::vector<Doc>& docs, const std::vector<std::int32_t>& labels, int classes,
          std::size_t features, double l2, const BowOptions& o) {
  Model m{classes, features, std::vector<double>(features * classes, 0.0),
          std::vector<double>(classes, 0.0)};
  const std::size_t nw = m.w.size(), np = nw + m.b.size();
  std::vector<double> grad(np), mom(np, 0.0), vel(np, 0.0), z(static_cast<std::size_t>(classes));
  const double n = static_cast<double>(docs.size()), b1 = 0.9, b2 = 0.999;
  for (int it = 1; it <= o.iterations; ++it) {
    std::fill(grad.begin(), grad.end(), 0.0);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      m.logits(docs[i], z.data());
      const double mx = *std::max_element(z.begin(), z.end());
      double sum = 0;
      for (double& v : z) sum += (v = std::exp(v - mx));
      for (int c = 0; c < classes; ++c) {
        const double g = (z[static_cast<std::size_t>(c)] / sum - (labels[i] == c ? 1.0 : 0.0)) / n;
        for (std::int32_t f : docs[i]) grad[static_cast<std::size_t>(f) * classes + c] += g;
        grad[nw + static_cast<std::size_t>(c)] += g;
      }
    }
    for (std::size_t k = 0; k < nw; ++k) grad[k] += l2 * m.w[k];  // no L2 on the biases
    const double c1 = 1 / (1 - std::pow(b1, it)), c2 = 1 / (1 - std::pow(b2, it));
    for (std::size_t k = 0; k < np; ++k) {
      mom[k] = b1 * mom[k] + (1 - b1) * grad[k];
      vel[k] = b2 * vel[k] + (1 - b2) * grad[k] * grad[k];
      double& p = k < nw ? m.w[k] : m.b[k - nw];
      p -= o.lr * mom[k] * c1 / (std::sqrt(vel[k] * c2) + 1e-8);
    }
  }
  return m;
}

}  // namespace

std::vector<std::string> bow_words(std::string_view text) {
  std::vector<std::string> words;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur));
    cur.clear();
  };
  for (char32_t c : data::decode_utf8(text)) {
    if (c >= 0x2E80) {  // CJK and later blocks: one character, one word
      flush();
      data::append_utf8(cur, c);
      flush();
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '\'') {
      cur += static_cast<char>(c);
    } else if (c >= 'A' && c <= 'Z') {
      cur += static_cast<char>(c - 'A' + 'a');
    } else if (c >= 0xC0 && c != 0xD7 && c != 0xF7) {  // Latin-1 letters and later scripts
      data::append_utf8(cur, c);
    } else {
      flush();
    }
  }
  flush();
  return words;
}

BowResult bow_baseline(const std::vector<std::string>& train_texts,
                       const std::vector<std::int32_t>& train_labels,
                       const std::vector<std::string>& val_texts,
                       const std::vector<std::int32_t>& val_labels,
                       const std::vector<std::string>& test_texts,
                       const std::vector<std::int32_t>& test_labels, int classes,
                       const BowOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unordered_map<std::string, std::size_t> counts;
  for (const std::string& t : train_texts)
    for (const std::string& w : bow_words(t)) ++counts[w];
  // Feature ids in sorted word order, so the result does not depend on hashing.
  std::vector<std::string> vocab;
  for (const auto& [w, c] : counts)
    if (c >= o.min_count) vocab.push_back(w);
  std::sort(vocab.begin(), vocab.end());
  std::unordered_map<std::string, std::int32_t> ids;
  for (std::size_t i = 0; i < vocab.size(); ++i)
    ids.emplace(vocab[i], static_cast<std::int32_t>(i));
  auto encode = [&](const std::vector<std::string>& texts) {
    std::vector<Doc> docs;
    for (const std::string& t : texts) {
      Doc d;
      for (const std::string& w : bow_words(t))
        if (auto it = ids.find(w); it != ids.end()) d.push_back(it->second);
      std::sort(d.begin(), d.end());
      d.erase(std::unique(d.begin(), d.end()), d.end());  // binary presence
      docs.push_back(std::move(d));
    }
    return docs;
  };
  const std::vector<Doc> tr = encode(train_texts), va = encode(val_texts), te = encode(test_texts);
  BowResult best;
  best.val_accuracy = -1;
  for (double l2 : o.l2_grid) {
    const Model m = fit(tr, train_labels, classes, vocab.size(), l2, o);
    const double v = accuracy(m, va, val_labels);
    if (o.verbose)
      std::fprintf(stderr, "baseline: L2 %g: train %.4f  val %.4f  test %.4f\n", l2,
                   accuracy(m, tr, train_labels), v, accuracy(m, te, test_labels));
    if (v > best.val_accuracy) {
      best = {l2, accuracy(m, tr, train_labels), v, accuracy(m, te, test_labels), vocab.size(), 0};
    }
  }
  best.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

}  // namespace stag::train_app

// Implementation of seeded shuffles and leak-free splits (see split.hpp).
#include <stag/models/data/split.hpp>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include <stag/models/data/text.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

namespace stag::data {
namespace {

// Salts keep the shuffle streams apart from each other and from dropout/initialisation.
constexpr std::uint64_t kShuffleSalt = 0x51a7'0001;
constexpr std::uint64_t kSplitSalt = 0x51a7'0002;

void shuffle_with_salt(std::vector<std::size_t>& v, std::uint64_t seed, std::uint64_t epoch,
                       std::uint64_t salt) {
  for (std::size_t i = v.size(); i > 1; --i) {
    // NOTE: modulo bias is below n / 2^64, far under anything measurable for data set sizes.
    const std::size_t j = static_cast<std::size_t>(stag::random::bits(seed, epoch, salt, i) % i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::vector<std::size_t> shuffled_indices(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::size_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = i;
  shuffle_in_place(v, seed, epoch);
  return v;
}

void shuffle_in_place(std::vector<std::size_t>& v, std::uint64_t seed, std::uint64_t epoch) {
  shuffle_with_salt(v, seed, epoch, kShuffleSalt);
}

SplitIndices split_by_key(std::span<const std::string> keys, const SplitOptions& o) {
  if (o.train < 0 || o.val < 0 || o.test < 0 || std::abs(o.train + o.val + o.test - 1.0) > 1e-9)
    throw Error("stag::data: split fractions train=" + std::to_string(o.train) +
                ", val=" + std::to_string(o.val) + ", test=" + std::to_string(o.test) +
                " must be non-negative and sum to 1");
  // Distinct keys in order of first appearance, and the items of each.
  std::unordered_map<std::string_view, std::size_t> group_of;
  std::vector<std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto [it, fresh] = group_of.emplace(keys[i], groups.size());
    if (fresh) groups.emplace_back();
    if (fresh || !o.drop_duplicates) groups[it->second].push_back(i);
  }
  std::vector<std::size_t> order(groups.size());
  for (std::size_t g = 0; g < order.size(); ++g) order[g] = g;
  shuffle_with_salt(order, o.seed, 0, kSplitSalt);
  const auto n = static_cast<double>(groups.size());
  const auto n_train = static_cast<std::size_t>(std::llround(o.train * n));
  const auto n_val =
      std::min(groups.size() - n_train, static_cast<std::size_t>(std::llround(o.val * n)));
  SplitIndices s;
  for (std::size_t k = 0; k < order.size(); ++k) {
    std::vector<std::size_t>& dest = k < n_train ? s.train : k < n_train + n_val ? s.val : s.test;
    const std::vector<std::size_t>& g = groups[order[k]];
    dest.insert(dest.end(), g.begin(), g.end());
  }
  for (auto* v : {&s.train, &s.val, &s.test}) std::sort(v->begin(), v->end());
  return s;
}

TextSplits split_dataset(const TextDataset& ds, const SplitOptions& options) {
  std::vector<std::string> keys;
  keys.reserve(ds.examples.size());
  for (const TextExample& e : ds.examples) keys.push_back(normalize_key(e.text));
  const SplitIndices s = split_by_key(keys, options);
  const auto part = [&](const std::vector<std::size_t>& rows) {
    return TextDataset{ds.name, ds.label_names, gather(ds.examples, rows)};
  };
  return {part(s.train), part(s.val), part(s.test)};
}

G2pSplits split_dataset(const G2pDataset& ds, const SplitOptions& options) {
  std::vector<std::string> keys;
  keys.reserve(ds.examples.size());
  for (const G2pExample& e : ds.examples) keys.push_back(e.word);
  const SplitIndices s = split_by_key(keys, options);
  // Every split keeps the full phoneme inventory so that one vocabulary serves all three.
  const auto part = [&](const std::vector<std::size_t>& rows) {
    return G2pDataset{gather(ds.examples, rows), ds.phoneme_set, 0, 0};
  };
  return {part(s.train), part(s.val), part(s.test)};
}

CorpusSplits split_dataset(const Corpus& corpus, const SplitOptions& options) {
  std::vector<std::string> keys;
  keys.reserve(corpus.documents.size());
  for (const std::string& d : corpus.documents) keys.push_back(normalize_key(d));
  const SplitIndices s = split_by_key(keys, options);
  const auto part = [&](const std::vector<std::size_t>& rows) {
    return Corpus{corpus.name, gather(corpus.documents, rows)};
  };
  return {part(s.train), part(s.val), part(s.test)};
}

}  // namespace stag::data

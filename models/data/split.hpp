// Seeded shuffling and train/validation/test splits that never share an item: items with the
// same key (normalised text, or the word for G2P) always land in the same split.
// Shuffles use stag's counter-based RNG, so they are the same with every compiler and library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <stag/models/data/datasets.hpp>

namespace stag::data {

struct SplitOptions {
  double train = 0.8, val = 0.1, test = 0.1;  // fractions of the distinct keys; must sum to 1
  std::uint64_t seed = 0;
  bool drop_duplicates = false;  // keep only the first item of each key
};

struct SplitIndices {
  std::vector<std::size_t> train, val, test;
};

// 0..n-1 in a random order that depends only on (seed, epoch).
std::vector<std::size_t> shuffled_indices(std::size_t n, std::uint64_t seed,
                                          std::uint64_t epoch = 0);
// Fisher-Yates shuffle of `v` driven by (seed, epoch).
void shuffle_in_place(std::vector<std::size_t>& v, std::uint64_t seed, std::uint64_t epoch = 0);

// Groups items by key, shuffles the distinct keys with the seed and deals them out by the
// fractions. Indices within each split are in ascending order. Throws stag::Error on fractions
// that are negative or do not sum to 1.
SplitIndices split_by_key(std::span<const std::string> keys, const SplitOptions& options);

template <class T>
std::vector<T> gather(const std::vector<T>& items, std::span<const std::size_t> rows) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (std::size_t r : rows) out.push_back(items[r]);
  return out;
}

struct TextSplits {
  TextDataset train, val, test;
};
// Key: normalize_key(text), so case and whitespace variants of a text cannot straddle splits.
TextSplits split_dataset(const TextDataset& ds, const SplitOptions& options);

struct G2pSplits {
  G2pDataset train, val, test;
};
// Key: the word, so a held-out word is never seen in training (with or without alternates).
G2pSplits split_dataset(const G2pDataset& ds, const SplitOptions& options);

struct CorpusSplits {
  Corpus train, val, test;
};
// Key: normalize_key(document): a repeated fortune cannot be both trained on and tested on.
CorpusSplits split_dataset(const Corpus& corpus, const SplitOptions& options);

}  // namespace stag::data

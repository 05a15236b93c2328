// stag-data-stats: loads every installed data set (tools/data.sh), prints its size, classes,
// leak-free split sizes and tokeniser figures, and times BPE training. The figures in
// docs/data.md come from this program; a data set that is not installed is reported and skipped.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <stag/models/data/batch.hpp>
#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/models/data/split.hpp>
#include <stag/ops/kernel.hpp>

namespace {
using namespace stag::data;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void print_text_dataset(const TextDataset& ds) {
  std::size_t bytes = 0, longest = 0;
  std::vector<std::string> texts;
  for (const TextExample& e : ds.examples) {
    bytes += e.text.size();
    longest = std::max(longest, e.text.size());
    texts.push_back(e.text);
  }
  std::printf("%s: %zu examples, %zu classes, mean %.0f bytes, longest %zu bytes\n",
              ds.name.c_str(), ds.examples.size(), ds.num_classes(),
              ds.examples.empty() ? 0.0 : double(bytes) / double(ds.examples.size()), longest);
  const std::vector<std::size_t> counts = ds.label_counts();
  for (std::size_t c = 0; c < counts.size(); ++c)
    std::printf("  %-22s %zu\n", ds.label_names[c].c_str(), counts[c]);
  const TextSplits s = split_dataset(ds, {});
  SplitOptions dedup;
  dedup.drop_duplicates = true;
  const TextSplits d = split_dataset(ds, dedup);
  std::printf(
      "  split 80/10/10 (seed 0): train %zu, val %zu, test %zu; without duplicates: %zu/%zu/%zu\n",
      s.train.examples.size(), s.val.examples.size(), s.test.examples.size(),
      d.train.examples.size(), d.val.examples.size(), d.test.examples.size());
  const CharTokenizer chars = CharTokenizer::build(texts, 1);
  const CharTokenizer chars5 = CharTokenizer::build(texts, 5);
  std::printf("  characters: %zu distinct, %zu seen 5+ times (vocab %zu with specials)\n",
              chars.vocab_size() - 4, chars5.vocab_size() - 4, chars5.vocab_size());
}

template <class F>
void try_load(const char* what, F&& f) {
  try {
    f();
  } catch (const stag::Error& e) {
    std::printf("%s: not available: %s\n", what, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_pydoc = argc > 1 && std::strcmp(argv[1], "--python-doc") == 0;
  try_load("sentiment", [] { print_text_dataset(load_sentiment()); });
  try_load("spam-assassin", [] { print_text_dataset(load_spam_assassin()); });
  try_load("fortune-languages", [] { print_text_dataset(load_fortune_languages()); });
  try_load("chinese-sources", [] { print_text_dataset(load_chinese_sources()); });
  try_load("cmudict", [] {
    const G2pDataset g = load_cmudict();
    G2pOptions o;
    o.strip_stress = true;
    const G2pDataset g2 = load_cmudict({}, o);
    const G2pSplits s = split_dataset(g, {});
    std::printf(
        "cmudict: %zu words (%zu alternates dropped, %zu non-letter words skipped), %zu phonemes "
        "with stress, "
        "%zu without; split train %zu, val %zu, test %zu words\n",
        g.examples.size(), g.alternates_dropped, g.words_skipped, g.phoneme_set.size(),
        g2.phoneme_set.size(), s.train.examples.size(), s.val.examples.size(),
        s.test.examples.size());
  });
  try_load("fortunes corpus", [] {
    const Corpus c = load_fortunes_corpus();
    std::printf("fortunes-en corpus: %zu documents, %zu bytes\n", c.documents.size(), c.bytes());
    for (std::size_t vocab : {1024, 4096, 8192}) {
      const auto t0 = std::chrono::steady_clock::now();
      const BpeTokenizer bpe = BpeTokenizer::train(c.documents, vocab);
      const double train_s = seconds_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      const std::vector<std::int32_t> stream = encode_corpus(bpe, c);
      const double encode_s = seconds_since(t1);
      std::printf(
          "  BPE vocab %zu: trained in %.2f s, %zu tokens (%.2f bytes/token), encoded in %.2f s\n",
          bpe.vocab_size(), train_s, stream.size(), double(c.bytes()) / double(stream.size()),
          encode_s);
    }
  });
  if (with_pydoc)
    try_load("python-doc corpus", [] {
      const Corpus c = load_python_doc_corpus();
      std::printf("python-doc corpus: %zu documents, %zu bytes\n", c.documents.size(), c.bytes());
      const auto t0 = std::chrono::steady_clock::now();
      const BpeTokenizer bpe = BpeTokenizer::train(c.documents, 8192);
      std::printf("  BPE vocab %zu: trained in %.2f s\n", bpe.vocab_size(), seconds_since(t0));
    });
  return 0;
}
